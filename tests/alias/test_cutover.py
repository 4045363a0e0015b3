"""The cut-over of a running LangChain app, Chroma → pgvector → a vector bucket: three app
processes serve queries with filters and writes (adds, updates, deletes) while the operator runs

1. create (Chroma) → shadow pgvector (dual-write, backfill by ``migrate``) → switch → rollback →
   switch → retire Chroma;
2. shadow a bucket with ``--feed capture`` (``vectorport sync --follow`` from pgvector's change
   capture) → switch, the follower still running (the switch waits for it to catch up, makes the
   candidate dual-written and the follower stops by itself) → rollback → switch → retire pgvector.

No call fails, every acknowledged write is in the final store (the bucket, read with boto3), and
every call that starts after a switch or rollback returned is served by the store it made serving
(the routing bound)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import vectorport
from vectorport import alias
from vectorport._exit import Status

from ._operator import Apps, check_bound, check_calls, check_store, count, entries, seed, shadowed, wait_for

pytestmark = [
    pytest.mark.alias,
    pytest.mark.langchain,
    pytest.mark.chroma,
    pytest.mark.pgvector,
    pytest.mark.s3vectors,
    pytest.mark.slow,
]

SEEDED = 60
Change = tuple[float, float, str]


def test_three_processes_move_from_chroma_to_pgvector_to_a_bucket(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    reg = str(tmp_path / "aliases.sqlite")
    apps = Apps(f"alias://app?registry={reg}", tmp_path)  # importing while the stores are prepared
    chroma, pg, bucket = url_for("chroma+http"), url_for("pgvector"), url_for("s3vectors")
    seed(chroma, SEEDED)
    alias.create("app", chroma, registry=reg)
    changes: list[Change] = []
    with apps.running() as logs:
        report = alias.shadow("app", pg, registry=reg)
        assert report.backfill is not None and report.backfill.copied >= SEEDED
        # the follower into the bucket starts now: its start and first pass run during the first move
        with _following(pg, bucket) as follower:
            wait_for(shadowed("app", reg, pg, 20), 60)
            changes += _switch_rollback_switch(reg, logs, pg, chroma, min_overlap=0.8)
            assert alias.retire("app", chroma, registry=reg).state.members[0].url == pg
            _capture_into(reg, logs, (pg, bucket), follower, changes)
        assert alias.retire("app", pg, registry=reg).state.members[0].url == bucket
        _serve(logs, 0.3)
    calls = entries(logs)
    check_calls(calls)
    check_store(bucket, calls, SEEDED)
    check_bound(calls, changes)


@contextmanager
def _following(pg: str, bucket: str) -> Iterator[subprocess.Popen[str]]:
    """``vectorport sync PG BUCKET --delete --follow`` running, from pgvector's change capture."""
    with vectorport.connect(pg) as source:
        source.setup_capture()
    follower = subprocess.Popen(
        [sys.executable, "-m", "vectorport", "sync", pg, bucket, "--delete", "--follow", "--no-progress"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield follower
    finally:
        follower.kill()
        with vectorport.connect(pg) as source:
            source.teardown_capture()


def _capture_into(
    reg: str, logs: list[Path], urls: tuple[str, str], follower: subprocess.Popen[str], changes: list[Change]
) -> None:
    """The second move: the bucket fed by the follower while it shadows, then switched."""
    pg, bucket = urls
    wait_for(lambda: count(bucket) >= SEEDED, 60)  # the follower's first pass
    assert alias.shadow("app", bucket, registry=reg, feed="capture").backfill is None
    wait_for(shadowed("app", reg, bucket, 20), 60)
    (lease,) = alias.status("app", registry=reg).followers.values()
    assert lease.running and lease.pid == follower.pid
    # the follower still runs: the first switch waits for it to catch up and takes over, and it
    # stops by itself; the follower's lag shows in the overlap (the bucket missed the newest
    # writes when asked)
    changes += _switch_rollback_switch(reg, logs, bucket, pg, min_overlap=0.6)
    _, err = follower.communicate(timeout=30)
    assert follower.returncode == 0, err


def _switch_rollback_switch(
    reg: str, logs: list[Path], new: str, old: str, min_overlap: float
) -> list[Change]:
    gates = alias.Gates(min_queries=20, min_overlap=min_overlap, max_p99_ratio=None)
    changes = []
    for step, serving in ((alias.switch, new), (alias.rollback, old), (alias.switch, new)):
        kwargs = {"gates": gates} if step is alias.switch else {}
        asked = time.time()
        done = step("app", registry=reg, **kwargs)
        assert done.status is Status.APPLIED, done.reasons
        changes.append((asked, time.time(), serving))
        _serve(logs, 0.3)
    return changes


def _serve(logs: list[Path], seconds: float) -> None:
    """Let the apps run ``seconds`` more (and check they are making calls)."""
    before = len(entries(logs))
    wait_for(lambda: len(entries(logs)) >= before + 10, 30)
    time.sleep(seconds)
