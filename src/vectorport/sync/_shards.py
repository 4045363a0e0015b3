"""The pass as one task per shard of the source (``runner.map``): each shard's scan pass with its
own state file beside the run's (``<state>.shard-I-of-N.sqlite``), so a retried task continues
its shard's pass from what the target acknowledged; writes and deletes are idempotent, so a
batch sent twice leaves one record. A per-index write cap is divided among the shards; the
progress bar follows what the shards' states committed; their reports are folded into the run's.

For shards of a sync run side by side by hand (``sync --shard I/N`` in N processes), what no
shard can judge alone is done once before and between the runs: :func:`prepare_target` creates
the target (so shards never race to create it) and :func:`changed_outside` compares the target's
count with the records of every shard's state.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..engine._checkpoint import shard_path
from ..engine._endpoints import StoreLike, probe_target
from ..engine._progress import Progress, polled
from ..engine._runner import Placement, Runner, worker_info
from ..engine._whole import note_pid
from ..exceptions import ConfigurationError
from ._context import SyncContext, check_spec, opened, pair_of
from ._options import SyncOptions
from ._pass import outside_shards, scan_pass
from ._report import SyncReport, SyncStats
from ._state import committed

__all__ = ["changed_outside", "merge_shards", "prepare_target", "shard_passes", "sync_shard"]


def sync_shard(
    source: StoreLike, target: StoreLike, shard: tuple[int, int], options: SyncOptions, why: str | None
) -> SyncReport:
    """One shard's scan pass in this process, with the shard's own state file: the work of one
    of a runner's shards (a Ray task). The runner created the target and decided ``why``."""
    with opened(source, target, options, shard, Placement("local")) as ctx:
        scan_pass(ctx, options.fixed(), why, None)
        ctx.report.sync.seconds = time.monotonic() - ctx.started
        return ctx.report


def merge_shards(report: SyncReport, shards: list[SyncReport], seconds: float) -> None:
    """Fold the passes a runner's shards ran side by side into the run's report: counts summed
    (over every pass of the run), notes worded as one process words them."""
    report.shards = shards
    report.sync = SyncStats.merged([report.sync, *(r.sync for r in shards)], seconds)
    full = [r for r in shards if r.sync.mode == "full"]
    if full:
        which = "" if len(full) == len(shards) else f" ({len(full)} of {len(shards)} shards)"
        report.notes.append(f"full pass{which}: {full[0].sync.reason}")
    resumed = sum(r.sync.resumed for r in shards)
    if resumed:
        report.notes.append(
            f"{resumed} of {len(shards)} shards continued the pass an earlier run left unfinished"
        )
    report.timings["sync"] = seconds


def shard_task(
    source: str, target: str, shard: tuple[int, int], options: SyncOptions, why: str | None
) -> tuple[SyncReport, dict[str, Any]]:
    """One task: one shard's pass, and where and how fast it ran."""
    started = time.monotonic()
    note_pid(shard)
    report = sync_shard(source, target, shard, options, why)
    s = report.sync
    worker = worker_info(f"sync {shard[0]}/{shard[1]}", s.source_read, started)
    worker.update(shard=shard[0], written=s.written, deleted=s.deleted, resumed=s.resumed)
    return report, worker


def shard_passes(runner: Runner, ctx: SyncContext, why: str | None) -> list[SyncReport]:
    """One task per shard; the shards' reports, in shard order."""
    if not (isinstance(ctx.source, str) and isinstance(ctx.target, str)):
        raise ConfigurationError(
            f"engine {runner.name} opens the stores in its tasks: pass URLs, not store objects"
        )
    assert ctx.report.state is not None
    placement = ctx.placement
    # every task keeps its state beside the driver's, not under its own node's default folder
    options = replace(placement.capped(ctx.dst.store, ctx.options), state=ctx.report.state)
    n, base = placement.shards, ctx.report.state
    started = time.monotonic()
    calls = [(ctx.source, ctx.target, (i, n), options, why) for i in range(n)]
    with (
        Progress("sync", None, enabled=ctx.options.progress) as bar,
        polled(bar, None, lambda: _compared(base, n)),
    ):
        results = list(runner.map(shard_task, calls))
    results.sort(key=lambda r: r[1]["shard"])
    placement.ran([w for _, w in results], time.monotonic() - started)
    return [r for r, _ in results]


def _compared(base: str, parts: int) -> int:
    """Source records the shards' running passes committed (for the progress bar)."""
    running = (committed(shard_path(base, (i, parts))) for i in range(parts))
    return sum(int(r.get("committed_read") or 0) for r in running if r is not None)


def prepare_target(
    source: StoreLike,
    target: StoreLike,
    *,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> tuple[str, str]:
    """Check the pair and create the target with the source's spec when it is missing; return
    the two labels. Run once before the shards of a sync, so they never race to create it."""
    src, dst = pair_of(source, target, source_options, target_options)
    try:
        check_spec(src, dst)
        return src.label, dst.label
    finally:
        dst.close()
        src.close()


def changed_outside(
    state: str | os.PathLike[str],
    target: StoreLike,
    parts: int,
    *,
    target_options: Mapping[str, Any] | None = None,
) -> str | None:
    """Why each of the ``parts`` shards of a sync must run a full pass (see
    :func:`~._pass.outside_shards`), with ``target`` opened here."""
    dst = probe_target(target, **dict(target_options or {}))
    try:
        return outside_shards(state, dst, parts)
    finally:
        dst.close()
