"""``sync`` on the memory backend: what a pass reads and writes, deletions only when asked, the
first sync after a migrate, a target changed behind sync's back, the state file and the CLI."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport.cli import app
from vectorport.cli._common import cli_text
from vectorport.exceptions import Advice, Advised, ConfigurationError
from vectorport.migrate import sync
from vectorport.sync._capture import check_follow
from vectorport.sync._state import SyncState

pytestmark = pytest.mark.memory
runner = CliRunner()
_ids = itertools.count()
DIM = 8


def _records(n: int, start: int = 0, version: int = 0) -> list[Record]:
    rng = np.random.default_rng(start + 1000 * version)
    return [
        Record(
            f"doc{i:05d}#c", rng.standard_normal(DIM).astype(np.float32), {"i": i, "v": version}, f"text {i}"
        )
        for i in range(start, start + n)
    ]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    n = next(_ids)
    src, dst = f"memory://sync-src-{n}", f"memory://sync-dst-{n}"
    vectorport.connect(src, dimension=DIM).upsert(_records(1000))
    yield src, dst, tmp_path / "state.sqlite"
    for url in (src, dst):
        with contextlib.suppress(vectorport.NotFoundError):
            vectorport.connect(url).drop()


def _equal(src: str, dst: str) -> None:
    v = vectorport.verify(src, dst, sample_queries=0)
    assert v.ok, v.to_dict()


def test_first_sync_copies_then_nothing_changes(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    first = sync(src, dst, state=state)
    assert first.sync.mode == "full" and first.sync.new == 1000 and first.sync.written == 1000
    assert first.exit_code == 0 and first.status == "synced"
    _equal(src, dst)
    again = sync(src, dst, state=state)
    s = again.sync
    assert (s.mode, s.written, s.unchanged, s.target_read, s.bins_checked) == (
        "incremental",
        0,
        1000,
        0,
        0,
    )
    assert s.source_read == 1000


def test_changes_new_and_deletions_only_with_the_flag(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    store = vectorport.connect(src)
    store.upsert(_records(3, start=10, version=1) + _records(2, start=5000))
    store.delete([f"doc{i:05d}#c" for i in (100, 200, 300, 400)])
    r = sync(src, dst, state=state)
    s = r.sync
    assert (s.changed, s.new, s.written, s.gone, s.deleted, s.target_read) == (3, 2, 5, 4, 0, 0)
    # the library names the option by its keyword; the command line words it as its flag
    assert any("pass delete=True to delete them" in n for n in r.notes), r.notes
    assert not any("--" in n for n in r.notes), r.notes
    assert vectorport.connect(dst).count() == 1002  # nothing deleted without --delete
    # a few segments, not all, were looked at for gone records
    assert 1 <= s.bins_checked <= 4 < s.bins
    r = sync(src, dst, state=state, delete=True, verify=True)
    assert (r.sync.written, r.sync.gone, r.sync.deleted) == (0, 4, 4)
    assert r.status == "verified" and r.verification is not None and r.verification.data_equal
    r = sync(src, dst, state=state, delete=True)
    assert (r.sync.written, r.sync.gone, r.sync.bins_checked) == (0, 0, 0)


def test_metadata_key_removed_and_text_dropped_are_changes(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    store = vectorport.connect(src)
    rec = store.get(["doc00007#c"])[0]
    store.upsert([Record(rec.key, rec.vector, {}, None)])
    r = sync(src, dst, state=state)
    assert r.sync.changed == 1
    got = vectorport.connect(dst).get(["doc00007#c"])[0]
    assert got.metadata == {} and got.text is None


def test_sync_after_migrate_rewrites_nothing(pair: tuple[str, str, Path], tmp_path: Path) -> None:
    src, dst, state = pair
    assert vectorport.migrate.run(src, dst, checkpoint=tmp_path / "ck.json").status == "verified"
    r = sync(src, dst, state=state)
    # every record compared, then every key listed to find extras
    assert r.sync.mode == "full" and r.sync.written == 0 and r.sync.target_read == 2000
    assert r.sync.unchanged == 1000


def test_target_changed_outside_sync_is_read_again(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    vectorport.connect(dst).delete(["doc00001#c", "doc00002#c"])
    vectorport.connect(dst).upsert([Record("stray", np.ones(DIM, np.float32))])
    r = sync(src, dst, state=state, delete=True)
    assert r.sync.mode == "full" and "changed outside sync" in (r.sync.reason or "")
    assert (r.sync.new, r.sync.deleted) == (2, 1)
    _equal(src, dst)


def test_extra_target_record_found_by_first_sync_is_deleted_later(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    vectorport.connect(dst, dimension=DIM).upsert([Record("stray", np.ones(DIM, np.float32))])
    r = sync(src, dst, state=state)
    assert r.sync.gone == 1 and r.sync.deleted == 0
    r = sync(src, dst, state=state, delete=True)
    assert r.sync.mode == "incremental" and r.sync.deleted == 1
    _equal(src, dst)


def test_state_of_another_pair_is_refused(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    other = f"memory://sync-other-{next(_ids)}"
    with pytest.raises(ConfigurationError, match="belongs to another sync"):
        sync(src, other, state=state)
    with pytest.raises(vectorport.NotFoundError):  # refused before anything was created
        vectorport.connect(other)


def test_state_records_what_the_target_holds(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    st = SyncState(state, {})
    try:
        assert st.records == 1000 and st.get("pass") is None
        assert st.parts is not None and st.target.digests == st.source.digests
    finally:
        st.close()


def test_wrong_dimension_target_is_refused(pair: tuple[str, str, Path]) -> None:
    src, _, state = pair
    other = f"memory://sync-dim-{next(_ids)}"
    vectorport.connect(other, dimension=DIM + 1)
    with pytest.raises(ConfigurationError, match="sync into a new collection"):
        sync(src, other, state=state)
    assert vectorport.connect(other).count() == 0
    vectorport.connect(other).drop()


def test_cli_json_report_and_every(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    res = runner.invoke(app, ["sync", src, dst, "--state", str(state), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "synced" and data["sync"]["new"] == 1000 and data["exit_code"] == 0
    vectorport.connect(src).delete(["doc00003#c"])
    res = runner.invoke(
        app, ["sync", src, dst, "--state", str(state), "--delete", "--every", "1s", "--runs", "2", "--json"]
    )
    assert res.exit_code == 0, res.output
    runs = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [r["sync"]["deleted"] for r in runs] == [1, 0]
    res = runner.invoke(app, ["sync", src, dst, "--state", str(state), "--verify"])
    assert res.exit_code == 0, res.output
    assert "sync (incremental)" in res.stdout and "equal" in res.stdout


def test_cli_every_needs_a_duration(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    res = runner.invoke(app, ["sync", src, dst, "--state", str(state), "--every", "soon"])
    assert res.exit_code == 2 and "30s, 10m or 2h" in res.output


def test_the_library_names_options_and_the_command_line_its_flags(
    pair: tuple[str, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    vectorport.connect(src).delete(["doc00001#c"])
    for args in (["--json"], []):
        res = runner.invoke(app, ["sync", src, dst, "--state", str(state), *args])
        assert res.exit_code == 0, res.output
        text = " ".join(res.stdout.split())
        assert "pass --delete to delete them" in text and "delete=True" not in text, text
    # without state= the library keeps the file the command line keeps for the same two URLs
    monkeypatch.setenv("VECTORPORT_STATE_DIR", str(tmp_path / "states"))
    first = sync(src, dst)
    assert first.state is not None and Path(first.state).is_relative_to(tmp_path / "states")
    res = runner.invoke(app, ["sync", src, dst, "--json"])
    assert res.exit_code == 0, res.output
    again = json.loads(res.stdout)
    assert again["state"] == first.state and again["sync"]["mode"] == "incremental"
    # advice naming the Python calls is worded as the command's flags, from the error's parts
    with pytest.raises(ConfigurationError) as refused:
        check_follow(vectorport.connect(src), src)
    assert "follow=True has nothing to follow: call sync again on a schedule" in str(refused.value)
    assert refused.value.advice == (Advice("follow", True),)
    worded = cli_text(refused.value)
    assert "--follow has nothing to follow: run sync --every 30s instead, which scans" in worded, worded
    state_msg = Advised.of(
        "the sync state s.sqlite belongs to another sync (...); pass another {} path", Advice("state")
    )
    assert cli_text(state_msg).endswith("; pass another --state path")


def test_migrate_on_a_finished_checkpoint_points_at_sync(pair: tuple[str, str, Path], tmp_path: Path) -> None:
    src, dst, _ = pair
    ck = tmp_path / "ck.json"
    assert vectorport.migrate.run(src, dst, checkpoint=ck).status == "verified"
    again = vectorport.migrate.run(src, dst, checkpoint=ck)
    assert again.already_complete and again.status == "verified" and again.notes == []
    vectorport.connect(src).upsert(_records(10, start=7000))
    res = runner.invoke(app, ["migrate", src, dst, "--checkpoint", str(ck)])
    assert res.exit_code == 1, res.output
    text = " ".join(res.stdout.split())
    assert "the source changed since this migration finished" in text
    assert "10 missing in the target" in text
    assert f"vectorport sync {src} {dst}" in text
    # without verification the record count tells
    res = runner.invoke(app, ["migrate", src, dst, "--checkpoint", str(ck), "--no-verify", "--json"])
    assert res.exit_code == 0, res.output
    (note,) = json.loads(res.stdout)["notes"]
    assert "it holds 1010 records, 1000 when the migration finished" in note and "vectorport sync" in note
    # and sync does what the note says
    assert sync(src, dst, state=tmp_path / "st.sqlite").sync.written == 10


def test_a_commit_cut_between_commit_and_begin_is_completed_by_the_next(tmp_path: Path) -> None:
    """Ctrl-C can land after the state's COMMIT and before its BEGIN; the save in the pass's
    finally must then commit again without 'no transaction is active' (a CI run saw it)."""
    from vectorport.sync._state import SyncState

    state = SyncState(tmp_path / "state.sqlite", {"source": "a", "target": "b"})
    try:
        state.put("pass", {"cursor": "x"})
        state.db.execute("COMMIT")  # where the interrupt left it: committed, no BEGIN yet
        state.commit()
        state.put("pass", {"cursor": "y"})
        state.commit()
    finally:
        state.close()
    again = SyncState(tmp_path / "state.sqlite", {"source": "a", "target": "b"})
    try:
        assert again.get("pass") == {"cursor": "y"}
    finally:
        again.close()


def test_shards_side_by_side_sync_the_whole_pair(pair: tuple[str, str, Path]) -> None:
    from vectorport.migrate import SyncStats
    from vectorport.sync._shards import changed_outside, prepare_target

    src, dst, state = pair
    prepare_target(src, dst)
    vectorport.connect(dst).upsert([Record("stray", np.ones(DIM, np.float32))])
    first = [sync(src, dst, state=state, shard=(i, 3)) for i in range(3)]
    assert [Path(r.state or "").name for r in first] == [f"state.shard-{i}-of-3.sqlite" for i in range(3)]
    assert all(r.sync.mode == "full" and r.sync.new > 0 for r in first)
    total = SyncStats.merged([r.sync for r in first], 1.0)
    assert (total.new, total.gone, total.deleted) == (1000, 1, 0)  # the stray record, found once
    assert changed_outside(state, dst, 3) is None  # the states hold the target's 1,001 records

    store = vectorport.connect(src)
    store.upsert(_records(3, start=10, version=1) + _records(2, start=5000))
    store.delete([f"doc{i:05d}#c" for i in (100, 200, 300, 400)])
    second = [sync(src, dst, state=state, shard=(i, 3), delete=True) for i in range(3)]
    total = SyncStats.merged([r.sync for r in second], 1.0)
    assert (total.mode, total.changed, total.new, total.gone, total.deleted, total.target_read) == (
        "incremental",
        3,
        2,
        5,
        5,
        0,
    )
    _equal(src, dst)

    vectorport.connect(dst).delete(["doc00001#c"])
    assert "changed outside sync" in (changed_outside(state, dst, 3) or "")
    with pytest.raises(ConfigurationError, match="belongs to another sync"):
        sync(src, f"{dst}-other", state=state, shard=(0, 3))


def test_a_changed_fixed_option_is_refused_before_any_write(pair: tuple[str, str, Path]) -> None:
    """The options that shape what the target holds (the metadata policy, the text key) may not
    change between a sync and the next over the same state, as between a migration and its
    resume: refused naming each with both values (not a silent full pass); ``full`` may."""
    src, dst, state = pair
    sync(src, dst, state=state)
    vectorport.connect(src).upsert(_records(5, start=5000))
    with pytest.raises(ConfigurationError) as refused:
        sync(src, dst, state=state, metadata_policy="drop", delete=True)
    message = str(refused.value)
    assert message.startswith(
        f"the sync state {state} records metadata_policy='error', this run has metadata_policy='drop': "
        "metadata_policy cannot change between a sync run and the next over the same sync state; "
    ), message
    assert "full=True" in message and "another state= path" in message
    assert vectorport.connect(dst).count() == 1000  # nothing written
    res = runner.invoke(
        app, ["sync", src, dst, "--state", str(state), "--metadata-policy", "flatten", "--text-key", "t"]
    )
    assert res.exit_code == 2 and res.stdout == "", res.output
    (line,) = res.stderr.strip().splitlines()
    worded = (
        "records --metadata-policy error, no --text-key, this run has --metadata-policy flatten, --text-key t"
    )
    assert worded in " ".join(line.split()) and "pass --full to rewrite" in line, line
    assert vectorport.connect(dst).count() == 1000
    # the other options may change from one pass to the next
    again = sync(src, dst, state=state, delete=True, concurrency=1, batch_size=7)
    assert again.sync.mode == "incremental" and again.sync.new == 5
    # full=True changes them: a full pass with the new values, which later passes keep
    full = sync(src, dst, state=state, metadata_policy="drop", full=True)
    assert full.sync.mode == "full" and full.status == "synced"
    after = sync(src, dst, state=state, metadata_policy="drop")
    assert after.sync.mode == "incremental" and after.sync.written == 0
    with pytest.raises(
        ConfigurationError, match="records metadata_policy='drop', this run has metadata_policy='error'"
    ):
        sync(src, dst, state=state)


def test_an_unfinished_pass_goes_on_only_with_its_own_fixed_options(pair: tuple[str, str, Path]) -> None:
    src, dst, state = pair
    sync(src, dst, state=state)
    st = SyncState(state, {})  # a pass an earlier run (text_key='i') left unfinished
    try:
        transform = {"metadata_policy": "error", "text_key": "v"}
        st.put(
            "pass",
            {
                "mode": "full",
                "reason": "asked for (full)",
                "phase": "scan",
                "cursor": None,
                "expected": 1000,
                "started": 0.0,
                "transform": transform,
            },
        )
        st.restart_source()
        st.commit()
    finally:
        st.close()
    with pytest.raises(ConfigurationError, match="records text_key='v', this run has text_key=None"):
        sync(src, dst, state=state)
    # full=True starts a new pass with its own values instead of continuing that one
    report = sync(src, dst, state=state, full=True)
    assert report.sync.mode == "full" and not report.sync.resumed and report.sync.written == 0
    _equal(src, dst)
