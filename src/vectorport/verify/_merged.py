"""Verification by merged per-key-bin digests, for engines that split the work into tasks.

A verification that cannot hold every key hash in one process splits each store into native
scan segments (``scan(segment=(i, n))``), one task each. A task returns, per key bin
(:func:`vectorport._digest.bin_of`, the same for every backend), the XOR of its records'
16-byte digests and their count (:class:`~vectorport._digest.BinSums`, read by
:func:`~vectorport.engine._digestscan.digest_segment` as every verification reads), never
keys: a source record is digested as the target should hold it (after the migration's
transforms), a target record as it is. Merged on the driver, a key bin whose digest and count
agree holds equal records. Only the key bins that differ are read again, by tasks that scan
keys only and fetch just those keys from both stores (:func:`detail_task`), judged by the single-process rules
(:func:`~._verify.verify_stores`): vectors at tolerance, metadata by ``json_equal`` with the
backends' declared float ulps (so a Chroma target whose floats came back an ulp off still
verifies equal: its bins differ by digest, not by judgement), text exactly.

The sampled queries' exact top-k is merged the same way: each source task keeps the best rows of
its segment (:class:`~vectorport._exact.StreamingTopK`) and the driver folds them.

The tasks are plain functions of URLs (each opens its own stores), so an engine only maps them:
:func:`verify_merged` takes the ``runner``'s ``map`` (Ray tasks in :mod:`vectorport.ray`;
threads of this process by default).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._digest import MAX_BINS, bin_count
from .._exact import StreamingTopK
from .._features import Feature
from .._models import JSON, Record
from .._protocol import VectorStore
from .._report import DEFAULT_CAP
from ..engine._endpoints import Endpoint, open_source, probe_target
from ..engine._progress import Progress, ProgressMode
from ..engine._runner import LocalRunner
from ..engine._transform import MetadataPolicy, Transformer
from ..exceptions import ConfigurationError
from ._judge import VECTOR_TOLERANCE, start_differences
from ._queries import ask_queries, pick_queries, query_check
from ._tasks import SegmentDetail, Tasks, detail_task, digest_sides, fold_detail, segment_calls
from ._verify import VerifyReport, collection_differences

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


def _count(store: VectorStore, scanned: int) -> int:
    """The store's own count, or what its scan found when counting would be another full scan
    (buckets have no count API)."""
    return store.count() if Feature.NATIVE_COUNT in store.capabilities.features else scanned


@dataclass
class _Merge:
    """One merged verification: the URLs and options each task opens, the driver's endpoints,
    the key bins and the report being filled."""

    source: str
    target: str
    src_opts: dict[str, Any]
    dst_opts: dict[str, Any]
    runner: Tasks
    native: list[tuple[int, int]]
    src: Endpoint
    dst: Endpoint
    transformer: Transformer
    report: MergedVerifyReport
    parts: int = 0
    top_k: int = 0
    queries: list[Record] = field(default_factory=list)
    wanted: frozenset[int] = frozenset()


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
            report = MergedVerifyReport(src.label, dst.label, (0, 1), engine=engine, workers=workers)
            start_differences(report, cap)
            report.scan_segments, report.method = segments, "digest"
            report.collection = collection_differences(src.store, dst.store)
            if src.store.spec.dimension != dst.store.spec.dimension:  # as verify_stores says
                report.skipped.append("queries: the collections' dimensions differ")
                sample_queries = 0
            transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
            native = [(i, segments) for i in range(segments)]
            tasks = runner if runner is not None else LocalRunner().map
            m = _Merge(source, target, src_opts, dst_opts, tasks, native, src, dst, transformer, report)
            exact = _digest_pass(m, sample_queries, k, progress)
            if m.wanted:
                _detail_pass(m, tolerance, cap)
            if m.queries:
                t0 = time.monotonic()
                answers = ask_queries(src.store, dst.store, m.queries, m.top_k)()
                report.queries = query_check(dst.store, m.queries, exact, m.top_k, cap, answers)
                report.timings["queries"] = time.monotonic() - t0
        finally:
            dst.close()
    finally:
        src.close()
    report.per_worker.sort(key=lambda w: (str(w["task"]).startswith("detail"), str(w["task"])))
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


def _digest_pass(m: _Merge, sample_queries: int, k: int, progress: ProgressMode | bool) -> StreamingTopK:
    """Every native segment of both stores digested by the runner's tasks and merged; the
    report's counts and differing key bins; the sampled queries' exact top-k."""
    src, dst, report = m.src, m.dst, m.report
    source_count = src.store.count() if Feature.NATIVE_COUNT in src.capabilities.features else None
    # without a count (buckets), the most bins: a differing one then costs the fewest reads
    m.parts = MAX_BINS if source_count is None else bin_count(source_count)
    report.key_bins = m.parts
    limits = [t for t in (src.capabilities.max_top_k, dst.capabilities.max_top_k) if t]
    m.top_k = min([k, *limits])
    m.queries = pick_queries(src.store, (0, 1), sample_queries)
    qmatrix = (
        np.stack([np.asarray(r.vector, dtype=np.float32) for r in m.queries])
        if m.queries
        else np.empty((0, src.store.spec.dimension), dtype=np.float32)
    )
    t0 = time.monotonic()
    exact = StreamingTopK(src.store.spec.metric, qmatrix, m.top_k + 5)
    segments = len(m.native)
    calls = segment_calls(m.source, m.src_opts, "source", segments, m.parts, m.transformer, exact)
    calls += segment_calls(m.target, m.dst_opts, "target", segments, m.parts, None, None)
    with Progress("verify", source_count, enabled=progress) as bar:
        got = digest_sides(m.runner, calls, m.parts, exact, on_source=bar.advance)
    merged, scanned = got.sums, got.records
    report.per_worker.extend(got.workers)
    report.timings["digest"] = time.monotonic() - t0
    report.source_count = source_count if source_count is not None else scanned["source"]
    report.target_count = _count(dst.store, scanned["target"])
    report.target_scanned = scanned["target"]
    differing = merged["source"].differing(merged["target"])
    report.differing_bins = len(differing)
    report.bins = {"parts": m.parts, "differing": len(differing)}
    m.wanted = frozenset(differing)
    equal = set(range(m.parts)) - m.wanted
    report.compared = int(sum(int(merged["source"].counts[s]) for s in equal))
    return exact


def _detail_pass(m: _Merge, tolerance: float, cap: int) -> None:
    """The differing key bins compared record by record by the runner's tasks."""
    report = m.report
    t0 = time.monotonic()
    float_ulps = m.src.capabilities.metadata.float_ulps + m.dst.capabilities.metadata.float_ulps
    common = (m.parts, m.wanted, m.transformer, tolerance, float_ulps, cap)
    calls = [
        (m.source, m.target, m.src_opts, m.dst_opts, side, s, *common)
        for side in ("source", "target")
        for s in m.native
    ]
    d: SegmentDetail
    for d in m.runner(detail_task, calls):
        report.per_worker.append(d.worker)
        fold_detail(report, d)
    report.timings["detail"] = time.monotonic() - t0
