"""A capture-fed candidate's follower, a real ``vectorport sync --follow`` process: ``alias
status`` shows it running (its pid, how far behind); ``alias switch`` waits for it to be caught
up, takes the candidate over (dual-write) and the follower stops by itself, exit 0; a follower
of the same two stores is refused from then on, and ``alias shadow --feed capture`` lets one run
again. A lease that says the follower is far behind keeps the switch refused, nothing changed;
one that says a follower writes into the serving store is a finding of ``status``."""

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
from vectorport.sync._lease import Follower, follower

from ._data import filled, records
from ._operator import count, wait_for

pytestmark = [pytest.mark.alias, pytest.mark.pgvector]

NO_SHADOW_GATES = alias.Gates(min_queries=None, min_overlap=None, max_p99_ratio=None)


def _follow(source: str, target: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "vectorport", "sync", source, target, "--delete", "--follow", "--no-progress"],
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
