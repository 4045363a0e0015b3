"""The merged verification's report, and its entry for tasks that open the stores by URL.

:func:`verify_merged` reads each store as native scan segments (``scan(segment=(i, n))``), one
task of the ``runner``'s ``map`` each (Ray tasks in :mod:`vectorport.ray`; threads of this
process by default), each opening its own stores: a task returns, per key bin
(:func:`vectorport._digest.bin_of`, the same for every backend), the XOR of its records'
16-byte digests and their count, never keys, so no process holds every key. The run is the one
verification's (:func:`~._verify.verify_stores`: its digest method, detail tasks and
judgement, given the stores as URLs); :class:`MergedVerifyReport` adds how the tasks ran.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._models import JSON
from .._report import DEFAULT_CAP
from ..engine._endpoints import Endpoint, open_source, probe_target
from ..engine._progress import ProgressMode
from ..engine._runner import LocalRunner
from ..engine._transform import MetadataPolicy, Transformer
from ..exceptions import ConfigurationError
from ._judge import VECTOR_TOLERANCE
from ._tasks import Placed, Tasks
from ._verify import VerifyReport, verify_stores

__all__ = ["MergedVerifyReport", "Tasks", "verify_merged"]


@dataclass
class MergedVerifyReport(VerifyReport):
    """A :class:`~._verify.VerifyReport` computed from merged key-bin digests, plus how:
    ``engine``, ``workers``, the native ``scan_segments`` per store, the ``key_bins`` digested,
    those that differed, and each task's rate."""

    engine: str = "local"
    workers: int = 1
    scan_segments: int = 1
    key_bins: int = 0
    differing_bins: int = 0
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def sections(self) -> dict[str, JSON]:
        out = super().sections()
        scanned = sum(w["records"] for w in self.per_worker if not str(w["task"]).startswith("detail"))
        digest = self.timings.get("digest", 0.0)
        out.update(
            {
                "engine": self.engine,
                "workers": self.workers,
                "scan_segments": self.scan_segments,
                "key_bins": self.key_bins,
                "differing_bins": self.differing_bins,
                "records_per_second": round(scanned / digest, 1) if digest > 0 else None,
                "per_worker": list(self.per_worker),
                "timings": {k: round(v, 3) for k, v in self.timings.items()},
            }
        )
        return out


def verify_merged(
    source: str,
    target: str,
    *,
    runner: Tasks | None = None,
    segments: int = 2,
    workers: int = 1,
    engine: str = "local",
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    sample_queries: int = 20,
    k: int = 10,
    tolerance: float = VECTOR_TOLERANCE,
    cap: int = DEFAULT_CAP,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    progress: ProgressMode | bool = False,
) -> MergedVerifyReport:
    """Compare ``target`` with ``source`` (URLs) by merged segment digests (module docstring),
    each store read as ``segments`` native scan segments by ``runner``'s tasks. Same verdict,
    counts and difference lists as :func:`vectorport.verify`; ``progress`` as there (the
    ``verify`` stage counts the source's records, here as each segment's task finishes)."""
    if segments < 1:
        raise ConfigurationError(f"segments must be at least 1, got {segments}")
    started = time.monotonic()
    src_opts, dst_opts = dict(source_options or {}), dict(target_options or {})
    src = open_source(source, **src_opts)
    try:
        dst = _existing_target(target, src, dst_opts)
        try:
            tasks = runner if runner is not None else LocalRunner().map
            placed = Placed(tasks, source, target, src_opts, dst_opts, segments)
            report = MergedVerifyReport(src.label, dst.label, (0, 1), engine=engine, workers=workers)
            report.scan_segments = segments
            verify_stores(
                src.store,
                dst.store,
                Transformer(dst.capabilities.metadata, metadata_policy, text_key),
                sample_queries=sample_queries,
                k=k,
                tolerance=tolerance,
                cap=cap,
                progress=progress,
                placed=placed,
                report=report,
            )
        finally:
            dst.close()
    finally:
        src.close()
    bins = report.bins or {}
    report.key_bins, report.differing_bins = bins.get("parts", 0), bins.get("differing", 0)
    report.per_worker = sorted(
        placed.workers, key=lambda w: (str(w["task"]).startswith("detail"), str(w["task"]))
    )
    report.timings = placed.timings
    report.seconds = time.monotonic() - started
    report.timings["total"] = report.seconds
    return report


def _existing_target(target: str, src: Endpoint, dst_opts: dict[str, Any]) -> Endpoint:
    """The target, which must exist; ``dst_opts`` gains the collection name the tasks open."""
    dst = probe_target(target, src.store.spec.name, **dst_opts)
    try:
        if dst.naming is not None and dst.naming.refused:
            raise ConfigurationError(f"the target cannot exist: {dst.naming.reason()}")
        if not dst.exists:
            raise ConfigurationError(f"the target {dst.label} does not exist; nothing to verify")
    except BaseException:
        dst.close()
        raise
    if "collection" not in dst_opts and dst.naming is not None:
        dst_opts["collection"] = dst.naming.name
    return dst
