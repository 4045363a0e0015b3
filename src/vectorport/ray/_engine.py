"""``migrate --engine ray``: one Ray task per shard, each the ordinary single-process migration
of that shard (``migrate(shard=(i, n))``) with its own checkpoint, so Ray's retry of a task
whose worker died resumes from the last acknowledged batch; writes are idempotent upserts, so a
batch written twice leaves one record.

Two passes, as in one process: every shard's plan first (nothing is written when any shard's
plan is refused), then every shard's copy and verification. A target with a per-index write
cap (buckets: ``write_rate``) gets the cap divided among the workers. Verification is the
merged-digest verification of :func:`~._verify.verify_on_ray` over the whole pair (counts,
missing, extra, changed records, sampled queries), with no key list held anywhere.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import ray

from .._exit import Status
from .._features import write_cap_of
from .._registry import connect
from .._report import Report
from ..exceptions import ConfigurationError
from ..migrate import MigrationReport, migrate
from ..migrate._endpoints import open_source, probe_target
from ..migrate._merged import MergedVerifyReport
from ._verify import ensure_ray, reachable, verify_on_ray

__all__ = ["ClusterReport", "engine_fields", "migrate_on_ray", "note_pid", "write_cap"]


@dataclass
class ClusterReport(Report):
    """A migration run as ``workers`` Ray tasks: each shard's :class:`MigrationReport` and the
    merged totals, in the shape of the single-process report plus ``engine`` and ``workers``."""

    SCHEMA: ClassVar[str] = "vectorport.migrate-ray/1"

    source: str
    target: str
    workers: int
    status: Status = Status.PLANNED
    shards: list[MigrationReport] = field(default_factory=list)
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    source_count: int | None = None
    target_count: int | None = None
    write_rate_per_worker: float | None = None
    verification: MergedVerifyReport | None = None
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(r.copy.records for r in self.shards if r.copy is not None)

    def sections(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "records": self.records,
            **engine_fields(
                self.workers,
                self.records,
                self.timings.get("copy", 0.0),
                self.write_rate_per_worker,
                self.per_worker,
            ),
            "counts": {"source": self.source_count, "target": self.target_count},
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "shards": [r.to_dict() for r in self.shards],
            "verification": None if self.verification is None else self.verification.to_dict(),
            "notes": list(self.notes),
        }


def engine_fields(
    workers: int,
    records: int,
    seconds: float,
    write_rate_per_worker: float | None,
    per_worker: list[dict[str, Any]],
) -> dict[str, Any]:
    """What a run split over Ray tasks adds to its engine's report: ``engine``, ``workers``,
    the overall rate (``records`` over ``seconds``), the write cap each worker got and each
    task's node, pid, records and rate."""
    return {
        "engine": "ray",
        "workers": workers,
        "records_per_second": round(records / seconds, 1) if seconds > 0 else None,
        "write_rate_per_worker": write_rate_per_worker,
        "per_worker": list(per_worker),
    }


def note_pid(shard: tuple[int, int]) -> None:
    """Write this worker's pid as ``shard-I.pid`` into ``$VECTORPORT_RAY_PIDS`` when set: lets a
    test find (and kill) the worker running a shard."""
    pid_dir = os.environ.get("VECTORPORT_RAY_PIDS")
    if pid_dir:
        Path(pid_dir, f"shard-{shard[0]}.pid").write_text(str(os.getpid()))


def _run_shard(source: str, target: str, shard: tuple[int, int], options: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    note_pid(shard)
    report = migrate(source, target, shard=shard, **options)
    return {
        "report": report,
        "worker": {
            "shard": shard[0],
            "node": socket.gethostname(),
            "pid": os.getpid(),
            "records": report.copy.records if report.copy else 0,
            "seconds": round(time.monotonic() - started, 3),
            "records_per_second": round(report.copy.rate, 1) if report.copy else None,
        },
    }


def write_cap(target: str, options: Mapping[str, Any]) -> float | None:
    """The target's per-index write cap in records/s (``write_rate`` of a bucket), if any."""
    dst = probe_target(target, **dict(options))
    try:
        return write_cap_of(dst.store)
    finally:
        dst.close()


def migrate_on_ray(
    source: str,
    target: str,
    *,
    workers: int = 2,
    address: str | None = None,
    checkpoint: str | os.PathLike[str],
    verify: bool = True,
    metadata_policy: str = "error",
    text_key: str | None = None,
    batch_size: int | None = None,
    concurrency: int = 4,
    sample_queries: int = 20,
    max_retries: int = 3,
    target_options: Mapping[str, Any] | None = None,
) -> ClusterReport:
    """Migrate ``source`` to ``target`` (URLs) as ``workers`` Ray tasks, one per shard.

    ``checkpoint`` is required and must be on storage every worker sees (a shared file system
    on a real cluster): each shard keeps ``<checkpoint>.shard-I-of-N.json``, and the copy
    always continues from it (a retried task, or a second run after a failure). ``address`` is
    passed to ``ray.init`` (``"auto"``: the running cluster; ``None``: a local one when Ray is
    not initialised yet).
    """
    if workers < 1:
        raise ConfigurationError(f"workers must be at least 1, got {workers}")
    reachable(source, target)
    ensure_ray(address)
    started = time.monotonic()
    src = open_source(source)
    try:
        label, count = src.label, src.store.count()
    finally:
        src.close()
    dst_options = dict(target_options or {})
    report = ClusterReport(label, target, workers, source_count=count)
    cap = write_cap(target, dst_options)
    if cap is not None:
        report.write_rate_per_worker = cap / workers
        dst_options["write_rate"] = cap / workers
    common: dict[str, Any] = {
        "metadata_policy": metadata_policy,
        "text_key": text_key,
        "batch_size": batch_size,
        "concurrency": concurrency,
        "target_options": dst_options,
    }
    task = ray.remote(max_retries=max_retries, retry_exceptions=False)(_run_shard)
    shards = [(i, workers) for i in range(workers)]

    t0 = time.monotonic()
    planned = ray.get([task.remote(source, target, s, {**common, "plan_only": True}) for s in shards])
    report.timings["plan"] = time.monotonic() - t0
    refused = [p["report"] for p in planned if p["report"].status == Status.REFUSED]
    if refused:
        report.status, report.shards = Status.REFUSED, refused
        report.notes.append("a shard's plan was refused; nothing was written (see each shard's plan)")
        return report

    # the collection is created once, on the driver, before any worker writes
    spec = planned[0]["report"].plan.target_spec
    connect(
        target,
        dimension=spec.dimension,
        metric=spec.metric,
        embedding_model=spec.embedding_model,
        **dst_options,
    ).close()
    t0 = time.monotonic()
    runs = ray.get(
        [
            task.remote(
                source,
                target,
                s,
                {
                    **common,
                    "checkpoint": str(checkpoint),
                    # a retried task must continue its own shard from its checkpoint
                    "resume": True,
                    "verify": False,
                },
            )
            for s in shards
        ]
    )
    report.timings["copy"] = time.monotonic() - t0
    report.shards = [r["report"] for r in runs]
    report.per_worker = [r["worker"] for r in runs]
    report.status = Status.COPIED
    if verify:
        t0 = time.monotonic()
        report.verification = verify_on_ray(
            source,
            target,
            workers=workers,
            metadata_policy=metadata_policy,
            text_key=text_key,
            sample_queries=sample_queries,
            max_retries=max_retries,
            target_options=dst_options,
        )
        report.timings["verify"] = time.monotonic() - t0
        report.status = report.verification.status
        report.target_count = report.verification.target_count
    else:
        target_store = connect(target, **dst_options)
        try:
            report.target_count = target_store.count()
        finally:
            target_store.close()
    report.timings["total"] = time.monotonic() - started
    return report
