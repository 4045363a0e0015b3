"""The alias on memory stores, in one process: opening, routing, dual-write and repairs, shadow
reads, the backfill's race, the switch's gates, rollback and retire."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport import Record, alias
from vectorport._exit import ExitCode, Status
from vectorport.alias._embedding import Embedders
from vectorport.alias._idle import IDLE_WAIT
from vectorport.alias._registry import Registry
from vectorport.alias._routing import Router, Routing
from vectorport.alias._shadow import Shadow
from vectorport.alias._writes import Op, repair, write
from vectorport.exceptions import BackendError, ConfigurationError, NotFoundError
from vectorport.migrate import PlanRefusedError

from ._data import DIM, filled, records, registry

pytestmark = [pytest.mark.memory, pytest.mark.alias]


@pytest.fixture
def reg(tmp_path: Path) -> str:
    return registry(tmp_path)


@pytest.fixture
def names(request: pytest.FixtureRequest) -> tuple[str, str]:
    slug = request.node.name.replace("[", "-").replace("]", "")
    return f"memory://{slug}-old", f"memory://{slug}-new"


def _close_all(*urls: str) -> None:
    for url in urls:
        with contextlib.suppress(NotFoundError):
            vectorport.connect(url).drop()


@pytest.fixture
def pair(names: tuple[str, str]):  # type: ignore[no-untyped-def]
    old, new = names
    filled(old)
    yield old, new
    _close_all(old, new)


def test_alias_opens_like_a_store_and_serves_the_serving_member(pair: tuple[str, str], reg: str) -> None:
    old, _ = pair
    report = alias.create("docs", old, registry=reg)
    assert (report.status, report.exit_code) == (Status.APPLIED, ExitCode.OK)
    store = vectorport.connect(f"alias://docs?registry={reg}")
    direct = vectorport.connect(old)
    q = np.ones(DIM, dtype=np.float32)
    assert store.query(q, k=5, filter={"lang": "en"}).keys == direct.query(q, k=5, filter={"lang": "en"}).keys
    assert store.count() == 60 and store.spec.dimension == DIM
    assert [r.key for r in store.get(["doc#1", "nope"])] == ["doc#1"]
    assert sum(len(p) for p in store.scan(batch_size=7)) == 60
    info, theirs = store.info(), direct.info()
    assert info["alias"]["phase"] == "serving" and info["capabilities"]["features"] == ["write"]
    # the serving member's limits, its feature protocols (text search …) not routed by the alias
    assert {**info["capabilities"], "features": None} == {**theirs["capabilities"], "features": None}
    store.close()


def test_missing_alias_and_bad_registry_are_clear_errors(reg: str, tmp_path: Path) -> None:
    with pytest.raises(
        NotFoundError, match=r"no alias 'nope' .*vectorport.alias.create\('nope', serve='URL'\)"
    ):
        vectorport.connect(f"alias://nope?registry={reg}")
    with pytest.raises(ConfigurationError, match="unknown alias registry"):
        vectorport.connect("alias://docs?registry=mysql://x/y")
    with pytest.raises(ConfigurationError, match="unknown alias URL parameter 'registy'"):
        vectorport.connect(f"alias://docs?registy={reg}")


def test_default_registry_lives_in_the_state_dir(
    pair: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VECTORPORT_STATE_DIR", str(tmp_path / "state"))
    alias.create("docs", pair[0])
    assert (tmp_path / "state" / "aliases.sqlite").is_file()
    with vectorport.connect("alias://docs") as store:
        assert store.count() == 60


def test_dual_write_reaches_the_candidate_and_a_failed_member_is_repaired(
    pair: tuple[str, str], reg: str
) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    store = vectorport.connect(f"alias://docs?registry={reg}")
    alias.shadow("docs", new, registry=reg, settle=0.3)
    time.sleep(alias.CHECK_INTERVAL)
    store.upsert([Record("added", np.ones(DIM), {"lang": "en"}, "a")])
    store.delete(["doc#0"])
    cand = vectorport.connect(new)
    assert [r.key for r in cand.get(["added", "doc#0"])] == ["added"]
    assert cand.count() == 60
    # the candidate's collection goes away: the app's write still succeeds, the miss is queued
    cand.drop()
    store.upsert([Record("while-down", np.ones(DIM), {"lang": "fr"}, "b")])
    assert vectorport.connect(old).get(["while-down"])
    status = alias.status("docs", registry=reg)
    assert status.repairs == 1 and status.status is Status.FINDINGS
    assert "1 writes wait in the repair queue" in status.reasons
    store.close()  # no process retries the queue now
    vectorport.connect(new, dimension=DIM).upsert(vectorport.connect(old).records())
    gates = alias.Gates(min_queries=None, min_overlap=None, max_p99_ratio=None, verify=False)
    refused = alias.switch("docs", registry=reg, gates=gates)
    assert refused.status is Status.REFUSED and refused.exit_code == ExitCode.REFUSED
    assert [g.name for g in refused.gates if not g.ok] == ["repairs"]
    assert refused.reasons == ["repairs: 1 repairs pending for the candidate"]
    vectorport.connect(new).delete(["while-down"])
    store = vectorport.connect(f"alias://docs?registry={reg}")
    store.count()  # a process serving the alias retries the queue in its background thread
    deadline = time.monotonic() + 10
    while Registry(reg).repair_count("docs") and time.monotonic() < deadline:
        time.sleep(0.2)  # the store's background thread retries the queue
    assert Registry(reg).repair_count("docs") == 0
    assert vectorport.connect(new).get(["while-down"])
    store.close()


def test_shadow_reads_are_compared_and_the_queue_drops_without_slowing(
    pair: tuple[str, str], reg: str
) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    store = vectorport.connect(f"alias://docs?registry={reg}")
    rng = np.random.default_rng(1)
    for i in range(40):
        store.query(rng.normal(size=DIM), k=5, filter={"year": {"$gte": 2003}} if i % 2 else None)
    store.close()  # drains the queue and writes the log
    report = alias.status("docs", registry=reg)
    figures = report.figures[new]
    assert figures.queries == 40 and figures.errors == 0 and figures.overlap == 1.0
    assert set(report.shapes[new]) == {"(none)", "year $gte"}
    # a queue of one: queries arriving faster than the candidate answers are dropped and counted
    store = vectorport.connect(f"alias://docs?registry={reg}")
    store.shadow = Shadow(store.registry, "docs", lambda _: None, store.embedders, size=1)
    for _ in range(300):
        store.query(rng.normal(size=DIM), k=5)
    store.close()
    counters = alias.status("docs", registry=reg).counters[new]
    assert counters["dropped"] > 0 and counters["shadowed"] + counters["dropped"] == 340


def test_after_a_switch_status_keeps_the_shadow_record_and_the_old_store_has_none_yet(
    pair: tuple[str, str], reg: str
) -> None:
    """The evidence a switch was made on stays in status (the new serving store's shadowed
    queries, said to be from before it served); the store that served before has shadowed
    nothing yet, which status says in words, not as ``nan``."""
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    store = vectorport.connect(f"alias://docs?registry={reg}")
    rng = np.random.default_rng(2)
    for _ in range(25):
        store.query(rng.normal(size=DIM), k=5)
    store.close()
    report = alias.switch("docs", registry=reg, gates=alias.Gates(min_queries=20, max_p99_ratio=None))
    assert report.status is Status.APPLIED, report.render()
    after = alias.status("docs", registry=reg)
    assert after.figures[new].queries == 25 and after.figures[old].queries == 0
    text = after.render()
    assert "nan" not in text, text
    assert f"shadow {new} (while it shadowed, before it served): 25 queries" in text, text
    assert f"shadow {old}: no shadowed queries answered yet" in text, text
    assert after.status is Status.HEALTHY, after.reasons


def test_shadow_queries_wait_for_a_pause_in_the_apps_calls(pair: tuple[str, str], reg: str) -> None:
    """A sampled query is asked of the candidate between the app's calls, not during one (where it
    would compete with it for the CPU), and asked anyway once the app has been busy IDLE_WAIT."""
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    store = vectorport.connect(f"alias://docs?registry={reg}")
    rng = np.random.default_rng(4)
    try:
        store.query(rng.normal(size=DIM), k=5)  # the routing read, the thread started
        assert store.shadow.drained(10)
        with store.activity.call():  # another call of the app in flight
            store.query(rng.normal(size=DIM), k=5)
            assert not store.shadow.drained(IDLE_WAIT / 3)  # not asked while a call runs
            assert store.shadow.drained(10)  # asked anyway: the app has been busy too long
            store.query(rng.normal(size=DIM), k=5)
            assert not store.shadow.drained(IDLE_WAIT / 3)
        assert store.shadow.drained(IDLE_WAIT)  # the pause: asked at once
    finally:
        store.close()
    assert alias.status("docs", registry=reg).figures[new].queries == 3


def test_a_member_down_during_shadow_is_counted_not_fatal(pair: tuple[str, str], reg: str) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    vectorport.connect(new).drop()
    store = vectorport.connect(f"alias://docs?registry={reg}")
    for _ in range(5):
        assert len(store.query(np.ones(DIM), k=3)) == 3
    store.close()
    report = alias.status("docs", registry=reg)
    assert report.figures[new].errors == 5 and report.status is Status.FINDINGS


def test_the_backfill_never_overwrites_a_newer_write(pair: tuple[str, str], reg: str) -> None:
    """An app write lands between the bulk copy's read of the serving store and its write to
    the candidate: the copy's older record must not stay in the candidate."""
    old, new = pair
    alias.create("docs", old, registry=reg)
    app = vectorport.connect(f"alias://docs?registry={reg}")
    newer = Record("doc#5", np.full(DIM, 9.0), {"lang": "en", "v": 2}, "newer")

    def racing_copy(serving: vectorport.BaseStore[object], candidate: vectorport.BaseStore[object]) -> int:
        read = list(serving.records())  # the copy reads ...
        app.upsert([newer])  # ... the app writes through the alias (serving, then candidate) ...
        app.delete(["doc#6"])
        candidate.upsert(read)  # ... and the copy writes what it read: doc#5 older, doc#6 back
        return len(read)

    time.sleep(alias.CHECK_INTERVAL)
    report = alias.shadow("docs", new, registry=reg, copy=racing_copy, settle=alias.CHECK_INTERVAL)
    assert report.backfill is not None and report.backfill.touched == 2 and report.backfill.recopied == 2
    got = vectorport.connect(new).get(["doc#5", "doc#6"])
    assert [(r.key, r.text, r.metadata) for r in got] == [("doc#5", "newer", {"lang": "en", "v": 2})]
    assert vectorport.verify(old, new).differences == 0
    app.close()


def _shadowed(reg: str, n: int) -> None:
    store = vectorport.connect(f"alias://docs?registry={reg}")
    rng = np.random.default_rng(2)
    for _ in range(n):
        store.query(rng.normal(size=DIM), k=10)
    store.close()


def test_switch_is_refused_while_the_candidate_lacks_records(pair: tuple[str, str], reg: str) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    _shadowed(reg, 30)
    vectorport.connect(old).upsert(records(3, prefix="behind-the-alias"))  # not through the alias
    report = alias.switch("docs", registry=reg, gates=alias.Gates(min_queries=20, max_p99_ratio=None))
    assert report.status is Status.REFUSED and report.exit_code == 4
    assert [g.name for g in report.gates if not g.ok] == ["verify"]
    assert "3 records (3 missing)" in report.reasons[0]
    assert alias.status("docs", registry=reg).state.phase is alias.Phase.SHADOW


def test_switch_is_refused_below_the_overlap_gate(pair: tuple[str, str], reg: str) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    moved = [Record(r.key, -np.asarray(r.vector), r.metadata, r.text) for r in records(60)]
    vectorport.connect(new).upsert(moved)  # the candidate ranks differently
    _shadowed(reg, 30)
    report = alias.switch(
        "docs",
        registry=reg,
        gates=alias.Gates(min_queries=20, min_overlap=0.9, max_p99_ratio=None, verify=False),
    )
    failed = {g.name for g in report.gates if not g.ok}
    assert report.status is Status.REFUSED and failed == {"overlap"}
    assert "overlap" in report.reasons[0] and "the gate asks >= 0.9" in report.reasons[0]
    report = alias.switch(
        "docs",
        registry=reg,
        gates=alias.Gates(min_queries=40, min_overlap=None, max_p99_ratio=None, verify=False),
    )
    assert {g.name for g in report.gates if not g.ok} == {"queries"}


def test_switch_rollback_switch_retire_keep_every_write(pair: tuple[str, str], reg: str) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    app = vectorport.connect(f"alias://docs?registry={reg}")
    _shadowed(reg, 30)
    gates = alias.Gates(min_queries=20, max_p99_ratio=None)  # sub-millisecond memory stores: noise
    assert alias.switch("docs", registry=reg, gates=gates).status is Status.APPLIED
    app.upsert([Record("after-switch", np.ones(DIM), {"lang": "en"}, "s")])
    assert app.served_by == new
    assert vectorport.connect(old).get(["after-switch"]), "the previous store receives every write"
    assert alias.rollback("docs", registry=reg).state.phase is alias.Phase.SHADOW
    app.delete(["doc#1"])
    assert app.served_by == old and app.get(["after-switch"]) and not vectorport.connect(new).get(["doc#1"])
    with pytest.raises(ConfigurationError, match="serves alias 'docs'"):
        alias.retire("docs", old, registry=reg)
    _shadowed(reg, 30)
    assert alias.switch("docs", registry=reg, gates=gates).status is Status.APPLIED
    report = alias.retire("docs", old, registry=reg)
    assert report.state.phase is alias.Phase.SERVING and [m.url for m in report.state.members] == [new]
    app.upsert([Record("after-retire", np.ones(DIM), {}, "r")])
    assert not vectorport.connect(old).get(["after-retire"])
    assert vectorport.verify(new, new).differences == 0
    phases = [e["phase"] for e in alias.status("docs", registry=reg).events]
    assert phases == ["serving", "shadow", "shadow", "switched", "shadow", "switched", "serving"]
    app.close()


def test_a_registry_that_is_no_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "aliases.sqlite"
    bad.write_text("not a database\n" * 200)
    with pytest.raises(
        BackendError, match=r"the alias registry .*aliases.sqlite failed \(write\): file is not a database"
    ):
        alias.status("docs", registry=str(bad))


@pytest.mark.chroma
def test_a_candidate_whose_backfill_fails_leaves_the_alias(
    names: tuple[str, str], reg: str, tmp_path: Path
) -> None:
    old, _ = names
    store = vectorport.connect(old, dimension=DIM)
    store.upsert([Record("nested", np.ones(DIM), {"author": {"name": "ada"}}, "t")])  # Chroma cannot hold it
    try:
        alias.create("docs", old, registry=reg)
        with pytest.raises(PlanRefusedError):
            alias.shadow("docs", f"chroma://{tmp_path}/chroma?collection=docs", registry=reg, settle=0.0)
        report = alias.status("docs", registry=reg)
        assert report.state.phase is alias.Phase.SERVING and [m.url for m in report.state.members] == [old]
        assert report.events[-1]["detail"] == "backfill failed: candidate removed"
    finally:
        store.drop()


def test_a_candidate_that_fails_a_write_just_before_the_switch_gets_it_and_keeps_newer_ones(
    pair: tuple[str, str], reg: str
) -> None:
    """A process that has not seen the switch writes two keys while the candidate is down (both
    queued for it); the switched alias writes one of them again. Drained after the switch, the
    queue brings the new serving store the key it missed, and leaves the newer text of the other."""
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    registry_ = Registry(reg)
    seen = Router(registry_, "docs").current()
    down = Routing(seen.state, {old: seen.stores[old]}, {new: "down for the test"})
    off = alias.Gates(min_queries=None, min_overlap=None, max_p99_ratio=None, verify=False)
    assert alias.switch("docs", registry=reg, gates=off).status.value == "applied"
    after = Router(registry_, "docs").current()

    def put(routing: Routing, key: str, text: str) -> None:
        write(registry_, routing, Op("upsert", [Record(key, np.ones(DIM), {"lang": "en"}, text)]))

    put(down, "missed", "only before")
    put(down, "twice", "first text")
    put(after, "twice", "second text")
    assert registry_.repair_count("docs") == 2
    repair(registry_, after, Embedders())
    held = {r.key: r.text for r in vectorport.connect(new).get(["missed", "twice"])}
    assert held == {"missed": "only before", "twice": "second text"}
    assert registry_.repair_count("docs") == 0


def test_writes_the_previous_store_missed_reach_it_when_a_rollback_makes_it_serve(
    pair: tuple[str, str], reg: str
) -> None:
    old, new = pair
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    off = alias.Gates(min_queries=None, min_overlap=None, max_p99_ratio=None, verify=False)
    assert alias.switch("docs", registry=reg, gates=off).status.value == "applied"
    registry_ = Registry(reg)
    switched = Router(registry_, "docs").current()
    down = Routing(switched.state, {new: switched.stores[new]}, {old: "down for the test"})
    write(registry_, down, Op("upsert", [Record("late", np.ones(DIM), {"lang": "en"}, "while down")]))
    assert registry_.repair_count("docs") == 1
    alias.rollback("docs", registry=reg)
    repair(registry_, Router(registry_, "docs").current(), Embedders())
    assert [r.text for r in vectorport.connect(old).get(["late"])] == ["while down"]
    assert registry_.repair_count("docs") == 0
