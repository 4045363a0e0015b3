"""Verification: is the target the source, after the declared transforms?

Streams the source once (with vectors), fetching the same keys from the target page by page:
missing keys, vectors at float32 tolerance, metadata (:func:`vectorport._json.json_equal`
after the metadata policy and ``text_key``) and text. Then scans the target's keys to find
extra and duplicate keys, compares counts, and runs sampled queries against both stores,
judged against the exact top-k computed from the same source stream. Memory: one page per
worker plus an 8-byte hash per key.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .._exact import StreamingTopK
from .._exit import ExitCode
from .._json import json_equal
from .._judge import tie_tolerance
from .._models import JSON, Record, ScanPage
from .._protocol import VectorStore
from ._progress import Progress
from ._report import DEFAULT_CAP, Capped
from ._transform import Transformer

__all__ = ["QueryCheck", "VerifyReport", "same_content", "vector_difference", "verify_stores"]

QUERY_SLACK = 0.1
"""How far an approximate target's mean recall may fall below its declared ``recall_tolerance``
on the sampled queries before verification fails: 20 queries are a small sample, and one bad
ANN answer is an index-quality fact, not lost data (it is still listed under
``below_required``). Garbled vectors or a wrong metric give recall near 0 and fail."""

RELATIVE_SLACK = 0.05
"""How far the target's mean recall may fall below the source's on the same sampled queries and
still count as "as good as the source" (sampling noise of 20 queries)."""

VECTOR_TOLERANCE = 1e-6
"""Largest allowed ``max|a - b|`` relative to ``max(1, max|a|)``: a few float32 ulps."""
_SHOW = 300


def _key_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


def _hashes(keys: Sequence[str]) -> npt.NDArray[np.uint64]:
    return np.fromiter((_key_hash(k) for k in keys), dtype=np.uint64, count=len(keys))


def _short(value: JSON) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOW else text[:_SHOW] + f"… ({len(text)} chars)"


def _metadata_paths(expected: dict[str, JSON], actual: dict[str, JSON]) -> list[str]:
    out = [f"metadata.{k}" for k in expected if k not in actual]
    out += [f"metadata.{k}" for k in actual if k not in expected]
    out += [f"metadata.{k}" for k in expected if k in actual and not json_equal(expected[k], actual[k])]
    return out


@dataclass
class QueryCheck:
    """Sampled queries run against both stores, judged against the exact top-k of the source."""

    k: int
    queries: int
    mean_overlap: float
    """Mean ``|source top-k ∩ target top-k| / k``."""
    min_overlap: float
    source_recall: float
    """Mean recall@k of the source against the exact top-k (ties within 1e-4 count)."""
    target_recall: float
    required_recall: float
    """The target's declared ``recall_tolerance`` (1.0 for exact stores)."""
    slack: float = 0.0
    """Allowed shortfall of the mean recall (:data:`QUERY_SLACK` for approximate targets)."""
    worst: Capped[dict[str, JSON]] = field(default_factory=Capped)
    """Queries where the target's recall fell below ``required_recall``."""

    @property
    def meets_required(self) -> bool:
        """Against exact truth: the target's recall reaches its declared ``recall_tolerance``
        (less :attr:`slack`)."""
        return self.target_recall + 1e-9 >= self.required_recall - self.slack

    @property
    def as_good_as_source(self) -> bool:
        """Against the source: the target's recall on the same queries is no worse than the
        source's (less :data:`RELATIVE_SLACK`)."""
        return self.target_recall + 1e-9 >= self.source_recall - RELATIVE_SLACK

    @property
    def ok(self) -> bool:
        """Search quality passes when the target meets its declared recall or is as good as
        the source: a target that answers like the source lost nothing in the move."""
        return self.meets_required or self.as_good_as_source

    @property
    def verdict(self) -> str:
        """One line: passed or failed, and against what."""
        t, s, r = self.target_recall, self.source_recall, self.required_recall - self.slack
        vs_source = f"target recall {t:.3f} vs source {s:.3f} on the same queries"
        vs_truth = f"{t:.3f} vs the {r:.2f} required against exact truth"
        if self.meets_required and self.as_good_as_source:
            return f"passed: {vs_source}; {vs_truth}"
        if self.meets_required:
            return f"passed against exact truth ({vs_truth}), though below the source ({vs_source})"
        if self.as_good_as_source:
            return f"passed: as good as the source ({vs_source}); both are below exact truth ({vs_truth})"
        return f"failed: worse than the source ({vs_source}) and below exact truth ({vs_truth})"

    def to_dict(self) -> dict[str, JSON]:
        return {
            "ok": self.ok,
            "verdict": self.verdict,
            "as_good_as_source": self.as_good_as_source,
            "meets_required": self.meets_required,
            "relative_slack": RELATIVE_SLACK,
            "k": self.k,
            "queries": self.queries,
            "mean_overlap": round(self.mean_overlap, 4),
            "min_overlap": round(self.min_overlap, 4),
            "source_recall": round(self.source_recall, 4),
            "target_recall": round(self.target_recall, 4),
            "required_recall": self.required_recall,
            "slack": self.slack,
            "below_required": self.worst.to_dict(),
        }


@dataclass
class VerifyReport:
    """Every difference between source and target (capped per kind, with exact totals)."""

    source: str
    target: str
    shard: tuple[int, int]
    source_count: int | None = None
    target_count: int | None = None
    compared: int = 0
    """Source records compared with the target's record of the same key."""
    target_scanned: int | None = None
    missing: Capped[str] = field(default_factory=Capped)
    """Keys in the source, not in the target."""
    extra: Capped[str] = field(default_factory=Capped)
    """Keys in the target, not in the source."""
    duplicates: int = 0
    """Target scan rows beyond the first for one key (a backend bug if ever non-zero)."""
    vectors: Capped[dict[str, JSON]] = field(default_factory=Capped)
    metadata: Capped[dict[str, JSON]] = field(default_factory=Capped)
    text: Capped[dict[str, JSON]] = field(default_factory=Capped)
    queries: QueryCheck | None = None
    skipped: list[str] = field(default_factory=list)
    """Checks not run, and why (e.g. extra keys and counts in a sharded verification)."""
    seconds: float = 0.0

    @property
    def count_mismatch(self) -> bool:
        if self.source_count is None or self.target_count is None:
            return False
        return self.source_count != self.target_count

    @property
    def differences(self) -> int:
        """Data differences found: missing, extra, duplicate and changed records, and a count
        mismatch (0 means the data is equal). Search quality is judged apart: :attr:`quality_ok`."""
        return (
            self.missing.total
            + self.extra.total
            + self.duplicates
            + self.vectors.total
            + self.metadata.total
            + self.text.total
            + int(self.count_mismatch)
        )

    @property
    def data_equal(self) -> bool:
        return self.differences == 0

    @property
    def quality_ok(self) -> bool:
        """The sampled queries passed (or none were run); see :attr:`QueryCheck.ok`."""
        return self.queries is None or self.queries.ok

    @property
    def ok(self) -> bool:
        return self.data_equal and self.quality_ok

    @property
    def status(self) -> str:
        """``verified``, ``differences`` (data; exit 1) or ``quality`` (data equal, search
        quality failed; exit 5)."""
        if not self.data_equal:
            return "differences"
        return "verified" if self.quality_ok else "quality"

    @property
    def exit_code(self) -> ExitCode:
        return {"differences": ExitCode.PROBLEM, "quality": ExitCode.QUALITY}.get(self.status, ExitCode.OK)

    def to_dict(self) -> dict[str, JSON]:
        return {
            "ok": self.ok,
            "status": self.status,
            "exit_code": int(self.exit_code),
            "data": {"equal": self.data_equal, "differences": self.differences},
            "quality": None
            if self.queries is None
            else {"ok": self.queries.ok, "verdict": self.queries.verdict},
            "differences": self.differences,
            "source": self.source,
            "target": self.target,
            "shard": list(self.shard),
            "counts": {
                "source": self.source_count,
                "target": self.target_count,
                "match": not self.count_mismatch,
                "compared": self.compared,
                "target_scanned": self.target_scanned,
            },
            "missing": self.missing.to_dict(),
            "extra": self.extra.to_dict(),
            "duplicates": self.duplicates,
            "vectors": self.vectors.to_dict(),
            "metadata": self.metadata.to_dict(),
            "text": self.text.to_dict(),
            "queries": self.queries.to_dict() if self.queries else None,
            "skipped": list(self.skipped),
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _PageResult:
    hashes: npt.NDArray[np.uint64]
    compared: int = 0
    missing: list[str] = field(default_factory=list)
    vectors: list[dict[str, JSON]] = field(default_factory=list)
    metadata: list[dict[str, JSON]] = field(default_factory=list)
    text: list[dict[str, JSON]] = field(default_factory=list)


def _near_tie_recall(exact: StreamingTopK, i: int, returned: Sequence[str], k: int) -> float:
    """Recall of ``returned`` against query ``i``'s exact top ``k``, near ties counting as hits
    (:func:`vectorport._judge.tie_tolerance`). ``exact`` keeps a few rows past ``k``: a
    returned key beyond them is a hit only when even the last kept row ties the k-th."""
    dist, keys = exact.distances[i], exact.keys[i]
    expected = min(k, len(keys))
    if expected == 0:
        return 1.0
    kth = float(dist[expected - 1])
    tol = tie_tolerance(kth)
    known = {str(key): float(d) for key, d in zip(keys, dist, strict=True)}
    beyond = float(dist[-1]) if len(dist) else float("inf")
    hits = 0
    for key in returned:
        true = known.get(key)
        if (true is not None and true <= kth + tol) or (true is None and beyond <= kth + tol):
            hits += 1
    return min(hits, expected) / expected


def vector_difference(expected: object, actual: object, tolerance: float) -> dict[str, JSON] | None:
    """How ``actual`` differs from ``expected`` beyond ``tolerance`` (relative to the largest
    component, at least 1), or ``None`` when it does not."""
    a = np.asarray(expected, dtype=np.float32)
    b = None if actual is None else np.asarray(actual, dtype=np.float32)
    if b is None or a.shape != b.shape:
        return {"problem": "missing or wrong shape"}
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    if diff > tolerance * max(1.0, float(np.max(np.abs(a))) if a.size else 1.0):
        return {"max_abs_diff": diff}
    return None


def same_content(
    expected: Record, actual: Record, *, tolerance: float = VECTOR_TOLERANCE, float_ulps: int = 0
) -> bool:
    """Whether the target's ``actual`` record holds ``expected`` (already transformed), by the
    rules of verification: vectors at ``tolerance``, metadata as JSON, text exactly."""
    return (
        vector_difference(expected.vector, actual.vector, tolerance) is None
        and json_equal(expected.metadata or {}, actual.metadata or {}, float_ulps)
        and expected.text == actual.text
    )


def _compare_page(
    page: Sequence[Record],
    target: VectorStore,
    transformer: Transformer | None,
    compare_vectors: bool,
    tolerance: float,
    float_ulps: int = 0,
) -> _PageResult:
    keys = [r.key for r in page]
    result = _PageResult(_hashes(keys))
    found = {r.key: r for r in target.get(keys)}
    for rec in page:
        got = found.get(rec.key)
        if got is None:
            result.missing.append(rec.key)
            continue
        result.compared += 1
        if transformer is not None:
            out = transformer.apply(rec.metadata, rec.text)
            meta, text = out.metadata, out.text
        else:
            meta, text = rec.metadata, rec.text
        if compare_vectors:
            problem = vector_difference(rec.vector, got.vector, tolerance)
            if problem is not None:
                result.vectors.append({"key": rec.key, **problem})
        actual = got.metadata or {}
        if not json_equal(meta, actual, float_ulps):
            result.metadata.append(
                {
                    "key": rec.key,
                    "paths": _metadata_paths(meta, actual),
                    "expected": _short(meta),
                    "actual": _short(actual),
                }
            )
        if text != got.text:
            result.text.append(
                {
                    "key": rec.key,
                    "expected": None if text is None else _short(text),
                    "actual": None if got.text is None else _short(got.text),
                }
            )
    return result


def _pick_queries(source: VectorStore, shard: tuple[int, int], n: int) -> list[Record]:
    """Up to ``n`` records spread over the source's first scan page (the queries)."""
    if n <= 0:
        return []
    for page in source.scan(include=["vector"], segment=shard):
        recs = list(page)
        if not recs:
            continue
        idx = np.unique(np.linspace(0, len(recs) - 1, num=min(n, len(recs))).astype(int))
        return [recs[int(i)] for i in idx]
    return []


def verify_stores(
    source: VectorStore,
    target: VectorStore,
    transformer: Transformer | None = None,
    *,
    source_label: str | None = None,
    target_label: str | None = None,
    shard: tuple[int, int] = (0, 1),
    compare_vectors: bool = True,
    sample_queries: int = 20,
    k: int = 10,
    tolerance: float = VECTOR_TOLERANCE,
    cap: int = DEFAULT_CAP,
    concurrency: int = 4,
    progress: bool = False,
    total_hint: int | None = None,
) -> VerifyReport:
    """Compare ``target`` with ``source`` (after ``transformer``); see the module docstring."""
    started = time.monotonic()
    sharded = shard[1] > 1
    report = VerifyReport(
        source_label or source.url.masked,
        target_label or target.url.masked,
        shard,
        missing=Capped(cap),
        extra=Capped(cap),
        vectors=Capped(cap),
        metadata=Capped(cap),
        text=Capped(cap),
    )
    if sharded:
        report.skipped.append(
            "counts, extra keys and queries: a shard is verified for its own source records only"
        )
    else:
        report.source_count = source.count()
        report.target_count = target.count()
    metric = source.spec.metric
    limits = [t for t in (source.capabilities.max_top_k, target.capabilities.max_top_k) if t]
    top_k = min([k, *limits])
    queries = [] if sharded or not compare_vectors else _pick_queries(source, shard, sample_queries)
    if not compare_vectors:
        report.skipped.append("vectors and queries: the vectors were re-embedded")
    qmatrix = (
        np.stack([np.asarray(r.vector, dtype=np.float32) for r in queries])
        if queries
        else np.empty((0, source.spec.dimension), dtype=np.float32)
    )
    exact = StreamingTopK(metric, qmatrix, top_k + 5)
    # a float read back from either store may differ by the ulps its backend declares (Chroma
    # parses numbers with a fast, not correctly rounded, algorithm): that is not a difference
    float_ulps = source.capabilities.metadata.float_ulps + target.capabilities.metadata.float_ulps
    hashes: list[npt.NDArray[np.uint64]] = []

    def merge(res: _PageResult) -> None:
        hashes.append(res.hashes)
        report.compared += res.compared
        for key in res.missing:
            report.missing.add(key)
        for item in res.vectors:
            report.vectors.add(item)
        for item in res.metadata:
            report.metadata.add(item)
        for item in res.text:
            report.text.add(item)

    include = ["vector", "metadata", "text"] if compare_vectors else ["metadata", "text"]
    with (
        Progress("verify", total_hint or report.source_count, enabled=progress) as bar,
        ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="vectorport-verify") as pool,
    ):
        inflight: deque[tuple[Future[_PageResult], int]] = deque()
        page: ScanPage
        for page in source.scan(include=include, segment=shard):
            if compare_vectors:
                exact.update_records(page.records)
            inflight.append(
                (
                    pool.submit(
                        _compare_page,
                        page.records,
                        target,
                        transformer,
                        compare_vectors,
                        tolerance,
                        float_ulps,
                    ),
                    len(page),
                )
            )
            while len(inflight) > max(1, concurrency):
                fut, n = inflight.popleft()
                merge(fut.result())
                bar.advance(n)
        while inflight:
            fut, n = inflight.popleft()
            merge(fut.result())
            bar.advance(n)
    if not sharded:
        known = np.sort(np.concatenate(hashes)) if hashes else np.empty(0, dtype=np.uint64)
        seen: list[npt.NDArray[np.uint64]] = []
        scanned = 0
        for page in target.scan(include=[]):
            keys = [r.key for r in page]
            scanned += len(keys)
            h = _hashes(keys)
            seen.append(h)
            pos = np.searchsorted(known, h)
            pos[pos >= len(known)] = 0
            absent = known[pos] != h if len(known) else np.ones(len(h), dtype=bool)
            for i in np.flatnonzero(absent):
                report.extra.add(keys[int(i)])
        report.target_scanned = scanned
        if seen:
            all_seen = np.sort(np.concatenate(seen))
            report.duplicates = int(np.count_nonzero(all_seen[1:] == all_seen[:-1]))
        if queries:
            report.queries = _query_check(source, target, queries, exact, top_k, cap)
    report.seconds = time.monotonic() - started
    return report


def _query_check(
    source: VectorStore,
    target: VectorStore,
    queries: list[Record],
    exact: StreamingTopK,
    k: int,
    cap: int,
) -> QueryCheck:
    overlaps: list[float] = []
    src_recalls: list[float] = []
    tgt_recalls: list[float] = []
    required = 1.0 if target.capabilities.exact else target.capabilities.recall_tolerance
    worst: Capped[dict[str, JSON]] = Capped(cap)
    for i, rec in enumerate(queries):
        a = source.query(rec.vector, k=k, include=[]).keys
        b = target.query(rec.vector, k=k, include=[]).keys
        expected = max(1, min(k, len(exact.keys[i])))
        overlaps.append(len(set(a) & set(b)) / expected)
        src_recalls.append(_near_tie_recall(exact, i, a, k))
        tgt = _near_tie_recall(exact, i, b, k)
        tgt_recalls.append(tgt)
        if tgt + 1e-9 < required:
            worst.add({"query_key": rec.key, "target_recall": round(tgt, 4), "target_keys": list(b)})
    n = len(queries)
    return QueryCheck(
        k=k,
        queries=n,
        mean_overlap=sum(overlaps) / n,
        min_overlap=min(overlaps),
        source_recall=sum(src_recalls) / n,
        target_recall=sum(tgt_recalls) / n,
        required_recall=required,
        slack=0.0 if target.capabilities.exact else QUERY_SLACK,
        worst=worst,
    )
