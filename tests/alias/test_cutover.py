"""The cut-over of a running LangChain app: three app processes serve queries with filters and
writes while the operator runs create → shadow (dual-write, backfill by migrate) → switch →
rollback → switch → retire. No call fails, every acknowledged write is in the final store (read
with its own client), and every process serves from the new store within the routing bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import vectorport
from vectorport import alias
from vectorport._exit import Status

from ._operator import Apps, check_bound, check_calls, check_store, entries, seed, shadowed, wait_for

pytestmark = [pytest.mark.alias, pytest.mark.langchain, pytest.mark.slow]

SEEDED = 120


@pytest.mark.chroma
@pytest.mark.pgvector
def test_three_processes_move_from_chroma_to_pgvector_and_back(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    reg = str(tmp_path / "aliases.sqlite")
    apps = Apps(f"alias://app?registry={reg}", tmp_path)
    old, new = url_for("chroma+http"), url_for("pgvector")
    seed(old, SEEDED)
    alias.create("app", old, registry=reg)
    gates = alias.Gates(min_queries=30, min_overlap=0.8, max_p99_ratio=None)
    with apps.running() as logs:
        report = alias.shadow("app", new, registry=reg)
        assert report.backfill is not None and report.backfill.copied >= SEEDED
        wait_for(shadowed("app", reg, new, 30), 60)
        changes = []
        for step, serving in ((alias.switch, new), (alias.rollback, old), (alias.switch, new)):
            kwargs = {"gates": gates} if step is alias.switch else {}
            asked = time.time()
            done = step("app", registry=reg, **kwargs)
            assert done.status is Status.APPLIED, done.reasons
            changes.append((asked, time.time(), serving))
            _serve(logs, 0.8)
        assert alias.retire("app", old, registry=reg).state.members[0].url == new
        _serve(logs, 0.5)
    calls = entries(logs)
    check_calls(calls)
    check_store(new, calls, SEEDED)
    check_bound(calls, changes)


def _serve(logs: list[Path], seconds: float) -> None:
    """Let the apps run ``seconds`` more (and check they are making calls)."""
    before = len(entries(logs))
    wait_for(lambda: len(entries(logs)) >= before + 10, 30)
    time.sleep(seconds)


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_capture_fed_bucket_candidate_takes_over_from_pgvector(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    """``--feed capture``: ``vectorport sync --follow`` feeds the bucket while it shadows; the
    switch makes it dual-written, applies what the stopped follower had not, and then judges."""
    reg = str(tmp_path / "aliases.sqlite")
    apps = Apps(f"alias://cap?registry={reg}", tmp_path)
    old, new = url_for("pgvector"), url_for("s3vectors")
    seed(old, SEEDED)
    with vectorport.connect(old) as source:
        source.setup_capture()
    alias.create("cap", old, registry=reg)
    follower = subprocess.Popen(
        [sys.executable, "-m", "vectorport", "sync", old, new, "--delete", "--follow", "--no-progress"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        stderr=subprocess.PIPE,
        text=True,
    )
    # the follower's lag shows: the bucket misses the newest writes of the shadowed queries' time
    gates = alias.Gates(min_queries=30, min_overlap=0.6, max_p99_ratio=None)
    try:
        with apps.running() as logs:
            wait_for(lambda: _count(new) >= SEEDED, 60)  # the follower's first pass
            assert alias.shadow("cap", new, registry=reg, feed="capture").backfill is None
            wait_for(shadowed("cap", reg, new, 30), 60)
            follower.send_signal(signal.SIGINT)  # the operator stops the follower, then switches
            follower.communicate(timeout=60)
            changes = []
            for step, serving in ((alias.switch, new), (alias.rollback, old), (alias.switch, new)):
                kwargs = {"gates": gates} if step is alias.switch else {}
                asked = time.time()
                done = step("cap", registry=reg, **kwargs)
                assert done.status is Status.APPLIED, done.reasons
                changes.append((asked, time.time(), serving))
                _serve(logs, 0.5)
            alias.retire("cap", old, registry=reg)
            _serve(logs, 0.3)
    finally:
        follower.kill()
        with vectorport.connect(old) as source:
            source.teardown_capture()
    calls = entries(logs)
    check_calls(calls)
    check_store(new, calls, SEEDED)
    check_bound(calls, changes)


def _count(url: str) -> int:
    try:
        with vectorport.connect(url) as store:
            return store.count()
    except vectorport.NotFoundError:
        return 0
