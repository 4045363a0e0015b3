"""``sync --engine ray``: the placement of a sync's scan pass on a Ray cluster.

Everything a sync means (options, target creation, the full-pass decision over every shard's
state, notes, status, verification, the report) is :func:`vectorport.sync`'s own, run on the
driver; :class:`~._engine.RayRunner` only places the pass: one Ray task per shard of the source
(:func:`~vectorport.migrate._sync.sync_shard`: the source's scan segment ``i`` of ``n`` with its
own state file beside ``state``), so Ray's retry of a task whose worker died continues that
shard's pass from what the target acknowledged; writes and deletes are idempotent, so a batch
sent twice leaves one record. A per-index write cap is divided among the workers; with
``progress`` the driver's bar follows what the shards' states committed.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ray

from ..migrate._checkpoint import shard_path
from ..migrate._merged import worker_info
from ..migrate._options import SyncOptions
from ..migrate._progress import Progress
from ..migrate._sync import committed, sync, sync_shard
from ..migrate._syncreport import SyncReport
from ._engine import RayRunner, gather, note_pid
from ._verify import ensure_ray

if TYPE_CHECKING:
    from ..migrate._sync import SyncContext

__all__ = ["shard_passes", "sync_on_ray"]


def _shard_task(
    source: str, target: str, shard: tuple[int, int], options: SyncOptions, why: str | None
) -> tuple[SyncReport, dict[str, Any]]:
    """One Ray task: one shard's pass, and where and how fast it ran."""
    started = time.monotonic()
    note_pid(shard)
    report = sync_shard(source, target, shard, options, why)
    s = report.sync
    worker = worker_info(f"sync {shard[0]}/{shard[1]}", s.source_read, started)
    worker.update(shard=shard[0], written=s.written, deleted=s.deleted, resumed=s.resumed)
    return report, worker


def shard_passes(runner: RayRunner, ctx: SyncContext, why: str | None) -> list[SyncReport]:
    """:meth:`RayRunner.sync_passes`: one task per shard; the shards' reports, in shard order."""
    assert isinstance(ctx.source, str) and isinstance(ctx.target, str)  # see RayRunner.check
    assert ctx.report.state is not None
    ensure_ray(runner.address)
    # every task keeps its state beside the driver's, not under its own node's default folder
    options = replace(runner.capped(ctx.dst.store, ctx.options), state=ctx.report.state)
    task = ray.remote(max_retries=runner.max_retries, retry_exceptions=False)(_shard_task)
    n, base = runner.workers, ctx.report.state
    started = time.monotonic()
    pending = [task.remote(ctx.source, ctx.target, (i, n), options, why) for i in range(n)]
    with Progress("sync", None, enabled=ctx.options.progress) as bar:
        results = gather(pending, bar, None, lambda: _compared(base, n))
    results.sort(key=lambda r: r[1]["shard"])
    runner.copy_seconds = time.monotonic() - started
    runner.per_worker = [w for _, w in results]
    runner.copied = sum(w["records"] for w in runner.per_worker)
    return [r for r, _ in results]


def _compared(base: str, parts: int) -> int:
    """Source records the shards' running passes committed (for the progress bar)."""
    running = (committed(shard_path(base, (i, parts))) for i in range(parts))
    return sum(int(r.get("committed_read") or 0) for r in running if r is not None)


def sync_on_ray(
    source: str,
    target: str,
    *,
    state: str | os.PathLike[str],
    workers: int = 2,
    address: str | None = None,
    max_retries: int = 3,
    **options: Any,
) -> SyncReport:
    """:func:`vectorport.sync` of ``source`` into ``target`` (URLs) with its pass run as
    ``workers`` Ray tasks, one per shard (:class:`RayRunner`); ``options`` are the same keyword
    arguments, meaning the same; the report adds ``engine``, ``workers``, per-worker rates and
    each shard's report (``shards``).

    ``state`` must be on storage every worker sees (a shared file system on a real cluster):
    each shard keeps ``<state>.shard-I-of-N.sqlite`` and continues its interrupted pass from it
    (a retried task, or the next run). ``workers`` is part of those names: another number of
    workers starts with a first (full) sync of its own shards. ``address`` is passed to
    ``ray.init`` (``"auto"``: the running cluster; ``None``: a local one when Ray is not
    initialised yet). Stores must be reachable from every worker (a server, a shared
    directory): ``memory://`` is not.
    """
    runner = RayRunner(workers, address, max_retries)
    return sync(source, target, runner=runner, state=state, **options)
