"""``export --engine ray``: each Ray task writes the Parquet parts of one scan segment of the
source (``part-<segment>-<n>.parquet``); the driver writes the manifest from the parts the tasks
report (sizes, SHA-256, content digests) and checks the snapshot against the source with the
merged-digest verification. ``import --engine ray`` is ``migrate --engine ray`` from
``parquet://DIR``, whose segments are whole parts, so each task reads its own files.

The snapshot directory must be one every worker writes to and the driver reads (a shared file
system on a real cluster).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ray

from .._registry import connect
from ..exceptions import ConfigurationError
from ..migrate._endpoints import open_source
from ..migrate._merged import verify_merged, worker_info
from ..snapshot._export import (
    SCAN_BATCH,
    ExportReport,
    finish_snapshot,
    prepare_directory,
    snapshot_url,
    write_segment,
)
from ._verify import ensure_ray, ray_runner, reachable

__all__ = ["export_on_ray"]


def _export_segment(
    url: str,
    options: Mapping[str, Any],
    directory: str,
    segment: tuple[int, int],
    max_part_bytes: int | None,
    batch_size: int,
) -> dict[str, Any]:
    started = time.monotonic()
    folder = Path(directory)
    # a retried task starts its segment again: the parts of a lost attempt go first, so none of
    # them stays beside the manifest for DuckDB to read
    for stale in [
        *folder.glob(f"part-{segment[0]:05d}-*.parquet"),
        *folder.glob(f".part-{segment[0]:05d}-*"),
    ]:
        stale.unlink(missing_ok=True)
    store = connect(url, **dict(options))
    try:
        parts = write_segment(store, folder, segment, max_part_bytes=max_part_bytes, batch_size=batch_size)
    finally:
        store.close()
    records = sum(p.records for p in parts)
    return {"parts": parts, "worker": worker_info(f"export {segment[0]}/{segment[1]}", records, started)}


def export_on_ray(
    source: str,
    directory: str | os.PathLike[str],
    *,
    workers: int = 2,
    address: str | None = None,
    segments: int | None = None,
    max_part_bytes: int | None = None,
    batch_size: int = SCAN_BATCH,
    overwrite: bool = False,
    verify: bool = True,
    sample_queries: int = 20,
    max_retries: int = 3,
    source_options: Mapping[str, Any] | None = None,
) -> ExportReport:
    """:func:`vectorport.snapshot.export` as Ray tasks: ``segments`` (default ``workers``) scan
    segments of ``source`` (a URL) written in parallel into ``directory``; the same snapshot
    format and report, plus ``engine`` and each task's rate."""
    if workers < 1:
        raise ConfigurationError(f"workers must be at least 1, got {workers}")
    if max_part_bytes is not None and max_part_bytes < 1:
        raise ConfigurationError(f"max_part_bytes must be positive, got {max_part_bytes}")
    reachable(source)
    ensure_ray(address)
    started = time.monotonic()
    options = dict(source_options or {})
    src = open_source(source, **options)
    try:
        path = prepare_directory(directory, overwrite).resolve()
        report = ExportReport(src.label, str(path), workers=workers, engine="ray")
        n = segments or workers
        task = ray.remote(max_retries=max_retries, retry_exceptions=False)(_export_segment)
        done = ray.get(
            [task.remote(source, options, str(path), (i, n), max_part_bytes, batch_size) for i in range(n)]
        )
        parts = [p for d in done for p in d["parts"]]
        report.per_worker = [d["worker"] for d in done]
        finish_snapshot(report, src.store, path, parts)
        report.timings["export"] = time.monotonic() - started
        if verify:
            t0 = time.monotonic()
            report.verification = verify_merged(
                source,
                snapshot_url(path),
                runner=ray_runner(max_retries),
                segments=n,
                workers=workers,
                engine="ray",
                sample_queries=sample_queries,
                source_options=options,
            )
            report.timings["verify"] = time.monotonic() - t0
        report.timings["total"] = time.monotonic() - started
        return report
    finally:
        src.close()
