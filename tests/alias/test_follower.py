"""A capture-fed candidate's follower, a real ``vectorport sync --follow`` process: ``alias
status`` shows it running (its pid, how far behind); ``alias switch`` waits for it to be caught
up, takes the candidate over (dual-write) and the follower stops by itself, exit 0; a follower
of the same two stores is refused from then on, and ``alias shadow --feed capture`` lets one run
again. A lease that says the follower is far behind keeps the switch refused, nothing changed;
one that says a follower writes into the serving store is a finding of ``status``. A follower
whose lease the switch cannot see (another ``--state``) is found by the capture's lock: refused,
nothing changed; a catch-up that fails gives the candidate back to capture. The lease is looked
for where ``vectorport sync`` keeps its state, also for a URL whose masked form differs."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import vectorport
from vectorport import alias
from vectorport._exit import Status
from vectorport.alias import _follower
from vectorport.alias._follower import sync_state, wait_caught_up
from vectorport.alias._model import Role
from vectorport.exceptions import ConfigurationError
from vectorport.sync._lease import Follower, follower, handover

from ._data import filled, records
from ._operator import count, wait_for

pytestmark = [pytest.mark.alias, pytest.mark.pgvector]

NO_SHADOW_GATES = alias.Gates(min_queries=None, min_overlap=None, max_p99_ratio=None)


def _follow(source: str, target: str, *more: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vectorport",
            "sync",
            source,
            target,
            "--delete",
            "--follow",
            "--no-progress",
            *more,
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_switch_takes_a_capture_fed_candidate_over_from_its_running_follower(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    reg = str(tmp_path / "aliases.sqlite")
    serving, candidate = url_for("pgvector"), url_for("pgvector")
    with filled(serving, 40) as store:
        store.setup_capture()
    alias.create("f", serving, registry=reg)
    proc = _follow(serving, candidate)
    try:
        wait_for(lambda: count(candidate) >= 40, 60)  # the follower's first pass
        assert alias.shadow("f", candidate, registry=reg, feed="capture").backfill is None
        with vectorport.connect(f"alias://f?registry={reg}") as app:
            app.upsert(records(10, prefix="late"))  # the serving store only: the follower copies them
            wait_for(lambda: count(candidate) >= 50, 30)
            shown = alias.status("f", registry=reg)
            (lease,) = shown.followers.values()
            assert lease.running and lease.pid == proc.pid
            assert f"pid {proc.pid}" in shown.render() and shown.status is Status.HEALTHY
            done = alias.switch("f", registry=reg, gates=NO_SHADOW_GATES)
            assert done.status is Status.APPLIED, done.reasons
            assert done.gates[0].name == "follower" and done.gates[0].ok
            assert any("do not start it again" in n for n in done.notes), done.notes
            _, err = proc.communicate(timeout=30)  # it stopped by itself
            assert proc.returncode == 0, err
            app.upsert(records(5, prefix="after"))  # dual-written: both stores have them
        assert count(candidate) == count(serving) == 55
        stopped = follower(sync_state(done.state.member(serving), done.state.member(candidate)))
        assert stopped is not None and not stopped.running and "handed over" in str(stopped.why)
        with pytest.raises(ConfigurationError, match="took the target over"):
            vectorport.sync(serving, candidate, follow=True, delete=True)
        alias.retire("f", serving, registry=reg)
    finally:
        proc.kill()
        with vectorport.connect(serving) as store:
            store.teardown_capture()


def test_a_follower_that_is_behind_keeps_the_switch_refused(
    url_for: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease as a follower far behind writes it (this process's pid: alive): the switch waits,
    then refuses by name, the candidate still fed by capture."""
    reg = str(tmp_path / "aliases.sqlite")
    serving, candidate = url_for("pgvector"), url_for("pgvector")
    filled(serving, 5).close()
    filled(candidate, 5).close()
    alias.create("g", serving, registry=reg)
    state = alias.shadow("g", candidate, registry=reg, feed="capture").state
    path = sync_state(state.serving, state.member(candidate))
    now = time.time()
    behind = Follower(os.getpid(), socket.gethostname(), now, now, now + 0.5, 12.0, 300, 0, None, None)
    path.with_name(path.name + ".follower").write_text(json.dumps(dataclasses.asdict(behind)))
    gate, lease = wait_caught_up(state, state.member(candidate), wait=0.5)
    assert not gate.ok and lease is not None and "300 changes behind" in gate.detail
    monkeypatch.setattr(_follower, "CATCH_UP", 0.5)
    refused = alias.switch("g", registry=reg, gates=NO_SHADOW_GATES)
    assert refused.status is Status.REFUSED and refused.reasons[0].startswith("follower:")
    assert [m.role for m in alias.status("g", registry=reg).state.members] == [Role.SERVING, Role.CANDIDATE]
    # a follower into the serving store, which the alias writes itself, is a finding of status
    into = sync_state(state.member(candidate), state.serving)
    into.with_name(into.name + ".follower").write_text(json.dumps(dataclasses.asdict(behind)))
    shown = alias.status("g", registry=reg)
    assert shown.status is Status.FINDINGS and len(shown.followers) == 2
    assert [r for r in shown.reasons if f"pid {os.getpid()}" in r and r.endswith("stop it")], shown.reasons


def _encoded(url: str) -> str:
    """The same URL with its table name's first letter percent-encoded (masked: decoded)."""
    head, table = url.rsplit("table=", 1)
    return f"{head}table=%{ord(table[0]):02X}{table[1:]}"


def test_a_follower_the_switch_cannot_see_by_its_lease_keeps_it_refused(
    url_for: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower run with its own --state leaves no lease where the switch looks: the capture's
    lock names it, the switch is refused and the candidate still fed by capture (before: the
    switch made it dual-written, its catch-up failed on the lock, and every later switch was
    refused for a backfill never finished). If the catch-up fails anyway (a follower that
    started after the gate), the candidate goes back to capture and the error is raised."""
    reg = str(tmp_path / "aliases.sqlite")
    serving, candidate = url_for("pgvector"), url_for("pgvector")
    with filled(serving, 20) as store:
        store.setup_capture()
    alias.create("h", serving, registry=reg)
    proc = _follow(serving, candidate, "--state", str(tmp_path / "elsewhere.sqlite"))
    try:
        wait_for(lambda: count(candidate) >= 20, 60)
        alias.shadow("h", candidate, registry=reg, feed="capture")
        refused = alias.switch("h", registry=reg, gates=NO_SHADOW_GATES)
        assert refused.status is Status.REFUSED, refused.reasons
        assert refused.reasons[0].startswith("follower:") and "another --state" in refused.reasons[0]
        feeds = [m.feed.value for m in alias.status("h", registry=reg).state.members]
        assert feeds == ["dual-write", "capture"]
        # the same follower, not seen by the gate: the catch-up pass fails on the capture's lock
        monkeypatch.setattr(_follower, "unleased", lambda *stores: None)
        with pytest.raises(ConfigurationError, match="another sync is applying the capture"):
            alias.switch("h", registry=reg, gates=NO_SHADOW_GATES)
        state = alias.status("h", registry=reg).state
        assert [(m.feed.value, m.backfilled) for m in state.members] == [
            ("dual-write", True),
            ("capture", True),
        ]
        assert handover(sync_state(state.serving, state.member(candidate))) is None
        assert "capture again" in alias.status("h", registry=reg).events[-1]["detail"]
    finally:
        proc.kill()
        proc.communicate()
    monkeypatch.undo()
    done = alias.switch("h", registry=reg, gates=NO_SHADOW_GATES)  # the follower gone: it applies
    assert done.status is Status.APPLIED, done.reasons
    with vectorport.connect(serving) as store:
        store.teardown_capture()


def test_the_lease_is_looked_for_where_sync_keeps_its_state(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    """A URL whose masked form is another string (an encoded value, a password): the state
    ``vectorport sync`` writes is the one the alias reads the follower's lease from (the
    command and the library name it by the URLs as given, not masked)."""
    reg = str(tmp_path / "aliases.sqlite")
    serving, candidate = url_for("pgvector"), _encoded(url_for("pgvector"))
    filled(serving, 5).close()
    alias.create("e", serving, registry=reg)
    state = alias.shadow("e", candidate, registry=reg, feed="capture").state
    written = vectorport.sync(serving, candidate, delete=True).state
    assert written == str(sync_state(state.serving, state.member(candidate)))
