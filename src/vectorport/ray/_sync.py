"""``sync --engine ray``: one Ray task per shard, each the ordinary single-process sync of that
shard (``sync(shard=(i, n))``: the source's scan segment ``i`` of ``n``) with its own state
file, so Ray's retry of a task whose worker died continues that shard's pass from what the
target acknowledged; writes and deletes are idempotent, so a batch sent twice leaves one record.

Before the tasks run, the driver creates the target when missing and compares the target's
count with every shard's state (:mod:`vectorport.migrate._syncshards`). A target with a
per-index write cap (buckets: ``write_rate``) gets the cap divided among the workers, as
``migrate --engine ray`` does. ``verify=True`` adds the merged-digest verification of
:func:`~._verify.verify_on_ray` over the whole pair.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import ray

from .._exit import Status
from ..exceptions import ConfigurationError
from ..migrate._merged import worker_info
from ..migrate._sync import sync
from ..migrate._syncreport import SyncReport, SyncStats
from ..migrate._syncshards import changed_outside, prepare_target
from ..migrate._transform import MetadataPolicy
from ._engine import engine_fields, note_pid, write_cap
from ._verify import ensure_ray, reachable, verify_on_ray

__all__ = ["ClusterSyncReport", "sync_on_ray"]


@dataclass
class ClusterSyncReport(SyncReport):
    """A sync pass run as ``workers`` Ray tasks: the single-process :class:`SyncReport` of the
    whole pair (``sync`` holds the shards' counts summed) plus ``engine``, ``workers``, the
    write cap each worker got, each task's rate and each shard's own report."""

    workers: int = 1
    shards: list[SyncReport] = field(default_factory=list)
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    write_rate_per_worker: float | None = None

    def sections(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(super().sections())
        compared = sum(w["records"] for w in self.per_worker)
        out.update(
            engine_fields(
                self.workers,
                compared,
                self.timings.get("sync", 0.0),
                self.write_rate_per_worker,
                self.per_worker,
            )
        )
        out["shards"] = [r.to_dict() for r in self.shards]
        return out


def _sync_shard(source: str, target: str, shard: tuple[int, int], options: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    note_pid(shard)
    report = sync(source, target, shard=shard, **options)
    s = report.sync
    worker = worker_info(f"sync {shard[0]}/{shard[1]}", s.source_read, started)
    worker.update(shard=shard[0], written=s.written, deleted=s.deleted, resumed=s.resumed)
    return {"report": report, "worker": worker}


def _notes(report: ClusterSyncReport) -> None:
    shards, stats = report.shards, report.sync
    full = [r for r in shards if r.sync.mode == "full"]
    if full:  # worded as one process words it when every shard ran one
        which = "" if len(full) == len(shards) else f" ({len(full)} of {len(shards)} shards)"
        report.notes.append(f"full pass{which}: {stats.reason}")
    resumed = sum(r.sync.resumed for r in shards)
    if resumed:
        report.notes.append(
            f"{resumed} of {len(shards)} shards continued the pass an earlier run left unfinished"
        )
    report.conclude()


def _check(source: str, target: str, workers: int) -> None:
    """Refuse, before any I/O, what the shards cannot do."""
    if workers < 1:
        raise ConfigurationError(f"workers must be at least 1, got {workers}")
    one = reachable(source, target)
    if one:
        raise ConfigurationError(
            f"{', '.join(one)} can be opened by one process at a time, and sync --engine ray writes "
            "from several workers; use a server (e.g. chroma+http://) or engine local (nothing was "
            "read or written)"
        )


def sync_on_ray(
    source: str,
    target: str,
    *,
    state: str | os.PathLike[str],
    workers: int = 2,
    address: str | None = None,
    delete: bool = False,
    full: bool = False,
    verify: bool = False,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    batch_size: int | None = None,
    concurrency: int = 4,
    sample_queries: int = 20,
    k: int = 10,
    max_retries: int = 3,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> ClusterSyncReport:
    """:func:`vectorport.sync` of ``source`` into ``target`` (URLs) as ``workers`` Ray tasks,
    one per shard; the same semantics and report, plus ``engine``, ``workers`` and per-worker
    rates.

    ``state`` is required and must be on storage every worker sees (a shared file system on a
    real cluster): each shard keeps ``<state>.shard-I-of-N.sqlite`` and continues its
    interrupted pass from it (a retried task, or the next run). ``--workers`` is part of those
    names: another number of workers starts with a first (full) sync of its own shards.
    ``address`` is passed to ``ray.init`` (``"auto"``: the running cluster; ``None``: a local
    one when Ray is not initialised yet). Stores must be reachable from every worker (a server,
    a shared directory): ``memory://`` is not.
    """
    _check(source, target, workers)
    ensure_ray(address)
    started = time.monotonic()
    dst_options = dict(target_options or {})
    src_label, dst_label = prepare_target(
        source, target, source_options=source_options, target_options=dst_options
    )
    report = ClusterSyncReport(src_label, dst_label, state=str(state), delete=delete, workers=workers)
    cap = write_cap(target, dst_options)
    if cap is not None:
        report.write_rate_per_worker = dst_options["write_rate"] = cap / workers
    why: bool | str = full or changed_outside(state, target, workers, target_options=dst_options) or False
    options: dict[str, Any] = {
        "delete": delete,
        "full": why,
        "state": str(state),
        "batch_size": batch_size,
        "concurrency": concurrency,
        "metadata_policy": metadata_policy,
        "text_key": text_key,
        "source_options": source_options,
        "target_options": dst_options,
    }
    task = ray.remote(max_retries=max_retries, retry_exceptions=False)(_sync_shard)
    t0 = time.monotonic()
    runs = ray.get([task.remote(source, target, (i, workers), options) for i in range(workers)])
    report.timings["sync"] = time.monotonic() - t0
    report.shards = [r["report"] for r in runs]
    report.per_worker = [r["worker"] for r in runs]
    report.sync = SyncStats.merged([r.sync for r in report.shards], time.monotonic() - started)
    _notes(report)
    if verify:
        t0 = time.monotonic()
        report.verification = verify_on_ray(
            source,
            target,
            workers=workers,
            metadata_policy=metadata_policy,
            text_key=text_key,
            sample_queries=sample_queries,
            k=k,
            max_retries=max_retries,
            source_options=source_options,
            target_options=dst_options,
        )
        report.timings["verify"] = time.monotonic() - t0
        if report.status == Status.SYNCED:
            report.status = report.verification.status
    report.timings["total"] = time.monotonic() - started
    return report
