"""``sync`` from a Parquet snapshot reads only the key bins that changed: the manifest keeps each
part's digest fold per key bin (:class:`vectorport._features.SupportsBinDigests`), the pass
compares them with its state and scans the bins that differ. A snapshot written before parts
kept them is scanned whole, as any source."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vectorport
from vectorport._digest import BinSums, bin_of, record_digest
from vectorport._features import Feature, bin_digests_of, supports
from vectorport.backends.parquet._format import MANIFEST
from vectorport.snapshot import export, snapshot_url

pytestmark = pytest.mark.parquet
pytest.importorskip("pyarrow")

N = 2_000
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _rec(i: int, v: int = 0) -> vectorport.Record:
    return vectorport.Record(
        f"doc{i // 8}.md#{i % 8}", [1.0 + i, float(v), 0.5, -1.0], {"i": i, "v": v}, f"t{i}"
    )


def _snapshot(tmp_path: Path, name: str) -> tuple[str, vectorport.VectorStore]:
    """A snapshot of N records, exported from a memory store (parts with per-bin digests)."""
    mem = vectorport.connect(f"memory://bins-{name}", dimension=4)
    mem.upsert([_rec(i) for i in range(N)])
    directory = tmp_path / "snap"
    export(f"memory://bins-{name}", directory)
    mem.drop()
    url = snapshot_url(directory)
    return url, vectorport.connect(url)


def _target_equals(url: str, target: str) -> None:
    report = vectorport.verify(url, target)
    assert report.status == "verified", report.to_dict()


def test_a_pass_reads_only_the_bins_that_changed(tmp_path: Path) -> None:
    url, snap = _snapshot(tmp_path, "changed")
    assert supports(snap, Feature.BIN_DIGESTS)
    target, state = "memory://bins-changed-dst", tmp_path / "state.sqlite"
    first = vectorport.sync(url, target, state=state)
    assert (first.sync.mode, first.sync.new, first.sync.bins_read) == ("full", N, first.sync.bins)
    assert first.sync.bins >= 256  # finer bins for a source that reads by bin

    quiet = vectorport.sync(url, target, state=state, delete=True)
    assert (quiet.sync.mode, quiet.sync.bins_read, quiet.sync.source_read) == ("incremental", 0, 0)

    snap.upsert([_rec(i, 1) for i in range(0, 1000, 100)])  # 10 changed, in place
    snap.delete([_rec(i).key for i in (5, 505, 1505)])  # 3 deleted
    report = vectorport.sync(url, target, state=state, delete=True)
    s = report.sync
    assert (s.mode, s.changed, s.new, s.deleted, s.written) == ("incremental", 10, 0, 3, 10)
    assert 0 < s.bins_read <= 13 and s.bins_checked <= s.bins_read
    assert s.source_read <= N // 10, s.to_dict()  # a full scan reads 2,000
    assert s.unchanged + s.changed <= s.source_read  # the scan, plus the gone look-ups
    _target_equals(url, target)
    vectorport.connect(target).drop()
    snap.drop()


def test_a_snapshot_without_bin_digests_is_scanned_whole(tmp_path: Path) -> None:
    url, snap = _snapshot(tmp_path, "old")
    manifest = tmp_path / "snap" / MANIFEST
    data = json.loads(manifest.read_text())
    for part in data["parts"]:
        del part["bins"]  # as parts were written before they kept them
    manifest.write_text(json.dumps(data))
    snap = vectorport.connect(url)
    target, state = "memory://bins-old-dst", tmp_path / "state.sqlite"
    assert vectorport.sync(url, target, state=state).sync.mode == "full"
    snap.upsert([_rec(7, 3)])  # the new part keeps its bins, the old one still has none
    report = vectorport.sync(url, target, state=state, delete=True)
    s = report.sync
    assert (s.mode, s.changed, s.bins_read, s.source_read) == ("incremental", 1, s.bins, N)
    _target_equals(url, target)
    vectorport.connect(target).drop()
    snap.drop()


_KILLED = """
import os, signal, sys, vectorport
from vectorport.sync import _pass
calls = 0
real = _pass.upserting
def upserting(*args, **kwargs):
    write = real(*args, **kwargs)
    def killing(records):
        global calls
        calls += 1
        if calls == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        write(records)
    return killing
_pass.upserting = upserting
vectorport.sync(sys.argv[1], sys.argv[2], state=sys.argv[3], delete=True, batch_size=4, concurrency=1)
"""


def test_a_killed_pass_over_bins_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    url, snap = _snapshot(tmp_path, "killed")
    # the target must outlive the killed process: a second snapshot directory
    dst = snapshot_url(tmp_path / "dst")
    state = tmp_path / "state.sqlite"
    assert vectorport.sync(url, dst, state=state).sync.mode == "full"
    snap.upsert([_rec(i, 2) for i in range(0, 2000, 50)])  # 40 changed
    snap.delete([_rec(i).key for i in (1, 2, 3)])
    env = {**os.environ, "PYTHONPATH": SRC_ROOT}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED), url, dst, str(state)], env=env, timeout=120
    )
    assert run.returncode == -signal.SIGKILL
    report = vectorport.sync(url, dst, state=state, delete=True)
    s = report.sync
    assert s.resumed and s.mode == "incremental" and s.bins_read < s.bins
    _target_equals(url, dst)
    again = vectorport.sync(url, dst, state=state, delete=True)
    assert (again.sync.written, again.sync.deleted, again.sync.source_read) == (0, 0, 0)
    vectorport.connect(dst).drop()
    snap.drop()


def _reference(store: vectorport.VectorStore, parts: int) -> BinSums:
    """The folds computed from every record read back: what the manifest must say."""
    sums = BinSums(parts)
    for page in store.scan():
        for r in page:
            sums.add(bin_of(r.key, parts), record_digest(r.key, r.vector, r.metadata, r.text))
    return sums


def test_the_manifest_folds_are_those_of_the_records_after_any_write(tmp_path: Path) -> None:
    store = vectorport.connect(snapshot_url(tmp_path / "w"), dimension=4)
    for start in range(0, 200, 20):  # ten small parts: merged past eight
        store.upsert([_rec(i) for i in range(start, start + 20)])
    store.upsert([_rec(i, 5) for i in range(3, 200, 17)])  # parts rewritten without the old rows
    store.delete([_rec(i).key for i in range(1, 200, 23)])
    binned = bin_digests_of(store)
    assert binned is not None
    for parts in (16, 256, 4096, 65536):
        got = binned.bin_digests(parts)
        assert got is not None and got.parts == min(parts, 4096)
        assert got.differing(_reference(store, got.parts)) == []

    # the records of chosen bins, page by page, resumed from a cursor
    bins = [1, 5, 9, 200]
    want = sorted(r.key for p in store.scan() for r in p if bin_of(r.key, 256) in bins)
    pages = iter(binned.scan_bins(256, bins, batch_size=2))
    first = next(pages)
    rest = [r.key for p in binned.scan_bins(256, bins, batch_size=3, cursor=first.cursor) for r in p]
    assert sorted([r.key for r in first] + rest) == want and len(want) > 2
    with pytest.raises(vectorport.ConfigurationError, match="another number of key bins"):
        next(iter(binned.scan_bins(512, bins, cursor=first.cursor)))
    with pytest.raises(vectorport.ConfigurationError, match="0 <= b < parts"):
        next(iter(binned.scan_bins(16, [16])))
    store.drop()


def test_edited_bin_digests_are_refused_by_the_integrity_check(tmp_path: Path) -> None:
    url, _ = _snapshot(tmp_path, "edited")
    manifest = tmp_path / "snap" / MANIFEST
    data = json.loads(manifest.read_text())
    kept = BinSums.from_sparse(4096, data["parts"][0]["bins"])
    kept.digests[0], kept.digests[1] = kept.digests[1], kept.digests[0]  # same XOR, bins swapped
    data["parts"][0]["bins"] = kept.to_sparse()
    manifest.write_text(json.dumps(data))
    with pytest.raises(vectorport.ConfigurationError, match="per-bin digests differ"):
        vectorport.connect(url).check_integrity()  # type: ignore[attr-defined]


def test_the_command_says_which_bins_it_read(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vectorport.cli import app

    url, snap = _snapshot(tmp_path, "cli")
    target, state = "memory://bins-cli-dst", str(tmp_path / "state.sqlite")
    runner = CliRunner()
    assert runner.invoke(app, ["sync", url, target, "--state", state]).exit_code == 0
    snap.upsert([_rec(11, 4)])
    out = runner.invoke(app, ["sync", url, target, "--state", state, "--delete"])
    assert out.exit_code == 0, out.output
    assert "sync (incremental): read" in out.stdout and "(in 1 of 256 key bins)" in out.stdout, out.stdout
    report = json.loads(runner.invoke(app, ["sync", url, target, "--state", state, "--json"]).stdout)
    assert (report["sync"]["bins_read"], report["sync"]["bins"]) == (0, 256)
    vectorport.connect(target).drop()
    snap.drop()
