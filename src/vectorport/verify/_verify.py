"""Verification: is the target the source, after the declared transforms?

Two methods, with the same report:

* ``digest`` (the default where it applies): each side is read once, the fastest way its
  backend allows (parallel native scan segments), and every record folded into per-key-bin
  content digests (:mod:`._digestscan`); the source side may instead be the copy's own digests
  of what it wrote. Bins whose digests agree hold the same records; only the bins that
  differ are compared record by record, as below. Missing, extra, duplicate and changed records
  are reported exactly as the keyed method reports them.
* ``keyed``: streams the source (with vectors), fetching the same keys from the target page by
  page: missing keys, vectors at float32 tolerance, metadata (:func:`vectorport._json.json_equal`
  after the metadata policy and ``text_key``) and text; then scans the target's keys for extra
  and duplicate keys. Used for shards, re-embedded vectors and targets that round floats
  (digests compare bytes, so every bin would differ).

Then counts, and sampled queries against both stores judged against the exact top-k computed
from the same pass (:mod:`._verify_queries`). Memory: one page per worker plus, in the keyed
method, an 8-byte hash per key; in the digest method 24 bytes per key bin.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._digest import BinSums, bin_count
from .._exact import StreamingTopK
from .._exit import Status
from .._gc import bulk_allocations
from .._models import JSON
from .._protocol import VectorStore
from .._report import DEFAULT_CAP, Capped, Report
from .._textsearch import canonical_language
from ..engine._digestscan import DigestScan
from ..engine._progress import Progress, ProgressMode
from ..engine._runner import LocalRunner
from ..engine._transform import Transformer
from ..exceptions import ConfigurationError
from ..migrate._readback import ReadBack, list_key_sums
from ._judge import (
    VECTOR_TOLERANCE,
    PageResult,
    compare_page,
    key_hashes,
    same_content,
    start_differences,
    vector_difference,
)
from ._queries import QueryCheck, SampledQueries, ask_queries, query_check, sampled_queries
from ._tasks import SegmentDetail, detail_task, digests_here, fold_detail

__all__ = [
    "QueryCheck",
    "VerifyReport",
    "collection_differences",
    "same_content",
    "vector_difference",
    "verify_stores",
]


@dataclass
class VerifyReport(Report):
    """Every difference between source and target (capped per kind, with exact totals)."""

    SCHEMA: ClassVar[str] = "vectorport.verify/1"

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
    method: str = "keyed"
    """``digest``: both sides (or the copy and the target) compared as per-key-bin content
    digests, then only differing bins record by record; ``keyed``: every source record
    fetched from the target by key."""
    bins: dict[str, int] | None = None
    """``digest`` only: how many key bins (``parts``), and how many differed. The JSON key stays
    ``segments``: it is part of the published ``vectorport.verify/1`` schema."""
    read_back: bool = False
    """``digest`` only: the target's side was the copy's read-back of each batch it wrote plus
    one key listing at the end, not a scan with vectors (:mod:`._readback`)."""
    collection: list[str] = field(default_factory=list)
    """How the two collections differ in what defines them: metric, dimension (unless
    re-embedded), text search language (where both stores have one). Each is a difference: the
    same records searched by another metric or language are not the same store."""
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
            + len(self.collection)
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
    def status(self) -> Status:
        """``verified``, ``differences`` (data; exit 1) or ``quality`` (data equal, search
        quality failed; exit 5)."""
        if not self.data_equal:
            return Status.DIFFERENCES
        return Status.VERIFIED if self.quality_ok else Status.QUALITY

    def diff_lines(self, shown: int = 5) -> list[str]:
        """The differences as ``vectorport verify`` prints them under its table: up to
        ``shown`` missing and extra keys, and vector, metadata and text differences."""
        lines = [f"  collection: {what}" for what in self.collection]
        lines += [f"  {name}: {key!r}" for name, capped in (("missing", self.missing), ("extra", self.extra))
                  for key in capped.items[:shown]]  # fmt: skip
        for name, diffs in (("vector", self.vectors), ("metadata", self.metadata), ("text", self.text)):
            lines += [f"  {name}: {item}" for item in diffs.items[:shown]]
        return lines

    def explain(self, shown: int = 5) -> str:
        """A readable account: the verdict, the counts, each kind of difference with its total,
        then :meth:`diff_lines` (what a failed ``assert_same`` says)."""
        lines = [f"verify {self.source} -> {self.target}: {self.status} ({self.differences} differences)"]
        lines.append(f"  counts (source / target): {self.source_count} / {self.target_count}")
        kinds = (
            ("missing in target", self.missing.total),
            ("extra in target", self.extra.total),
            ("duplicate keys in target", self.duplicates),
            ("vector differences", self.vectors.total),
            ("metadata differences", self.metadata.total),
            ("text differences", self.text.total),
        )
        lines += [f"  {name}: {total}" for name, total in kinds if total]
        if self.queries is not None and not self.queries.ok:
            lines.append(f"  search quality {self.queries.verdict}")
        return "\n".join(lines + self.diff_lines(shown))

    def sections(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "data": {"equal": self.data_equal, "differences": self.differences},
            "quality": None
            if self.queries is None
            else {"ok": self.queries.ok, "verdict": self.queries.verdict},
            "differences": self.differences,
            "collection": list(self.collection),
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
            "method": self.method,
            "segments": self.bins,
            "read_back": self.read_back,
            "skipped": list(self.skipped),
            "seconds": round(self.seconds, 3),
        }


class _Pass:
    """The record-by-record comparison: the source streamed (restricted to some key bins
    when ``only`` is given), the same keys fetched from the target page by page, then the
    target's keys scanned for extras and duplicates."""

    def __init__(
        self,
        report: VerifyReport,
        source: VectorStore,
        target: VectorStore,
        transformer: Transformer | None,
        compare_vectors: bool,
        tolerance: float,
        float_ulps: int,
        concurrency: int,
    ) -> None:
        self.report = report
        self.source, self.target, self.transformer = source, target, transformer
        self.compare_vectors, self.tolerance, self.float_ulps = compare_vectors, tolerance, float_ulps
        self.concurrency = max(1, concurrency)
        self.hashes: list[npt.NDArray[np.uint64]] = []

    def _merge(self, res: PageResult) -> None:
        report = self.report
        self.hashes.append(res.hashes)
        report.compared += res.compared
        for key in res.missing:
            report.missing.add(key)
        for item in res.vectors:
            report.vectors.add(item)
        for item in res.metadata:
            report.metadata.add(item)
        for item in res.text:
            report.text.add(item)

    def keyed(
        self,
        shard: tuple[int, int],
        exact: StreamingTopK | None,
        advance: Callable[[int], None] | None,
    ) -> None:
        include = ["vector", "metadata", "text"] if self.compare_vectors else ["metadata", "text"]
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="vectorport-verify") as pool:
            inflight: deque[tuple[Future[PageResult], int]] = deque()
            for page in self.source.scan(include=include, segment=shard):
                if exact is not None and self.compare_vectors:
                    exact.update_records(page.records)
                inflight.append(
                    (
                        pool.submit(
                            compare_page,
                            page.records,
                            self.target,
                            self.transformer,
                            self.compare_vectors,
                            self.tolerance,
                            self.float_ulps,
                        ),
                        len(page),
                    )
                )
                while len(inflight) > self.concurrency:
                    fut, n = inflight.popleft()
                    self._merge(fut.result())
                    if advance is not None:
                        advance(n)
            while inflight:
                fut, n = inflight.popleft()
                self._merge(fut.result())
                if advance is not None:
                    advance(n)

    def extras(self) -> None:
        """Target keys the source pass did not see, and keys the target holds twice."""
        report = self.report
        known = np.sort(np.concatenate(self.hashes)) if self.hashes else np.empty(0, dtype=np.uint64)
        seen: list[npt.NDArray[np.uint64]] = []
        scanned = 0
        for page in self.target.scan(include=[]):
            keys = [r.key for r in page]
            scanned += len(keys)
            h = key_hashes(keys)
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


def collection_differences(source: VectorStore, target: VectorStore, same_vectors: bool = True) -> list[str]:
    """What differs between the two collections' definitions: metric, dimension (when the
    vectors are the source's, not re-embedded) and text search language (``text_language``,
    where both stores have one)."""
    out: list[str] = []
    a, b = source.spec, target.spec
    if a.metric is not b.metric:
        out.append(f"metric: source {a.metric.value}, target {b.metric.value}")
    if same_vectors and a.dimension != b.dimension:
        out.append(f"dimension: source {a.dimension}, target {b.dimension}")
    lang_a, lang_b = getattr(source, "text_language", None), getattr(target, "text_language", None)
    # compared as one vocabulary: a table's ``spanish`` is a bucket analyzer's ``es``
    if (
        isinstance(lang_a, str)
        and isinstance(lang_b, str)
        and canonical_language(lang_a) != canonical_language(lang_b)
    ):
        out.append(f"text search language: source {lang_a}, target {lang_b}")
    return out


@bulk_allocations()
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
    progress: ProgressMode | bool = False,
    total_hint: int | None = None,
    copied: BinSums | None = None,
    method: str = "auto",
    read_back: ReadBack | None = None,
    target_scan: DigestScan | None = None,
    queries: SampledQueries | None = None,
) -> VerifyReport:
    """Compare ``target`` with ``source`` (after ``transformer``); see the module docstring.

    ``copied``: the copy's digests of what it wrote (:func:`vectorport.migrate.run` with
    ``single_pass``); the source is then not read again unless a key bin differs.
    ``method``: ``digest``, ``keyed`` or ``auto`` (digest where it applies).
    ``read_back``: the target's records as the copy read them back (:mod:`._readback`); the
    target is then only listed, without vectors. ``target_scan``: the target's digests, read
    whole by the run since its copy ended (with ``copied``; :class:`~._tasks.TargetScan`).
    ``queries``: the sampled queries, when the copy's read-back or ``target_scan`` already fed
    their exact top-k (else picked here).
    """
    if method not in ("auto", "digest", "keyed"):  # before any read
        raise ConfigurationError(f"verification method must be auto, digest or keyed, got {method!r}")
    started = time.monotonic()
    sharded = shard[1] > 1
    labels = (source_label or source.url.masked, target_label or target.url.masked)
    report = _new_report(labels, shard, cap, compare_vectors)
    report.collection = collection_differences(source, target, compare_vectors)
    queries, answers = _queries(report, source, target, shard, compare_vectors, sample_queries, k, queries)
    # digests need the target to hold values as written; floats read from a source that
    # rounds them (Chroma) were written as read, so only the target's rule decides
    target_ulps = target.capabilities.metadata.float_ulps
    chosen = _method(method, sharded, compare_vectors, target_ulps, tolerance, copied)
    # the target's rows are counted by a whole read of it (a read-back lists its keys, the run's
    # target scan reads every row) unless the method reads it by key
    _count(report, source, target, sharded, (read_back is None and target_scan is None) or chosen == "keyed")
    # a float read back from either store may differ by the ulps its backend declares (Chroma
    # parses numbers with a fast, not correctly rounded, algorithm): that is not a difference
    float_ulps = source.capabilities.metadata.float_ulps + target.capabilities.metadata.float_ulps
    report.method = chosen
    pass_ = _Pass(report, source, target, transformer, compare_vectors, tolerance, float_ulps, concurrency)
    with Progress("verify", total_hint or report.source_count, enabled=progress) as bar:
        _data_pass(pass_, shard, queries.exact, bar.advance, copied, read_back, target_scan)
    if answers is not None:
        report.queries = query_check(target, queries.records, queries.exact, queries.k, cap, answers())
    report.seconds = time.monotonic() - started
    return report


def _data_pass(
    pass_: _Pass,
    shard: tuple[int, int],
    exact: StreamingTopK,
    advance: Callable[[int], None],
    copied: BinSums | None,
    read_back: ReadBack | None,
    target_scan: DigestScan | None,
) -> None:
    """Every record compared, by key or by digest (the method the report names)."""
    report, sharded = pass_.report, shard[1] > 1
    if report.method == "keyed":
        pass_.keyed(shard, exact, advance)
        if not sharded:
            pass_.extras()
        return
    _by_digest(pass_, copied, exact, advance, read_back, target_scan)
    if report.target_count is None and not sharded:
        report.target_count = report.target_scanned


def _count(
    report: VerifyReport, source: VectorStore, target: VectorStore, sharded: bool, target_too: bool
) -> None:
    """Both stores' counts (a shard has none); a paced target's count is a key listing
    (buckets), which the data pass makes when it lists the target anyway (``target_too``)."""
    if not sharded:
        report.source_count = source.count()
        if target_too:
            report.target_count = target.count()


def _queries(
    report: VerifyReport,
    source: VectorStore,
    target: VectorStore,
    shard: tuple[int, int],
    compare_vectors: bool,
    sample_queries: int,
    k: int,
    queries: SampledQueries | None,
) -> tuple[SampledQueries, Callable[[], Any] | None]:
    """The sampled queries (picked here unless the copy fed them) and their answers, asked now
    and judged at the end against the exact top-k the data pass computes."""
    other_dimension = compare_vectors and source.spec.dimension != target.spec.dimension
    if other_dimension:  # a source vector is no query for the target: the data differ already
        report.skipped.append("queries: the collections' dimensions differ")
    if queries is None:
        asked = 0 if shard[1] > 1 or not compare_vectors or other_dimension else sample_queries
        queries = sampled_queries(source, target, shard, asked, k)
    answers = (
        ask_queries(source, target, queries.records, queries.k, queries.source_answers)
        if queries.records
        else None
    )
    return queries, answers


def _new_report(
    labels: tuple[str, str], shard: tuple[int, int], cap: int, compare_vectors: bool
) -> VerifyReport:
    """An empty report, saying which checks this verification leaves out."""
    report = VerifyReport(*labels, shard)
    start_differences(report, cap)
    if shard[1] > 1:
        report.skipped.append(
            "counts, extra keys and queries: a shard is verified for its own source records only"
        )
    if not compare_vectors:
        report.skipped.append("vectors and queries: the vectors were re-embedded")
    return report


def _listed_after(read_back: ReadBack, target: VectorStore, concurrency: int) -> tuple[BinSums, int] | None:
    """The target's key listing, made while the read-back finishes its last batches (the copy
    has written everything by now); ``None`` when the read-back failed."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectorport-verify-list") as pool:
        later = pool.submit(list_key_sums, target, read_back.parts, concurrency)
        read_back.join()
        listing = later.result()
    return listing if read_back.usable else None


def _method(
    asked: str,
    sharded: bool,
    compare_vectors: bool,
    float_ulps: int,
    tolerance: float,
    copied: BinSums | None,
) -> str:
    if asked == "keyed":
        return "keyed"
    # digests compare bytes: a target that may round floats (Chroma), re-embedded vectors or a
    # looser vector tolerance would differ everywhere and every bin would be re-read
    fits = not sharded and compare_vectors and float_ulps == 0 and tolerance <= VECTOR_TOLERANCE
    if asked == "digest" and not fits and copied is None:
        return "keyed"
    return "digest" if fits or (copied is not None and not sharded) else "keyed"


def _by_digest(
    pass_: _Pass,
    copied: BinSums | None,
    exact: StreamingTopK,
    advance: Callable[[int], None],
    read_back: ReadBack | None,
    target_scan: DigestScan | None = None,
) -> None:
    """Both sides as per-key-bin digests (the source's from the copy when given, the target's
    from the copy's read-back and one key listing when given); the bins that differ are
    then compared record by record, and only they."""
    report = pass_.report
    if copied is not None:
        parts = copied.parts
    elif read_back is not None:
        parts = read_back.parts
    else:
        parts = bin_count(report.source_count or 0)
    threads = pass_.concurrency

    def target_side() -> tuple[BinSums, int, list[int]]:
        """The target's content digests, rows, and bins whose keys changed since read-back."""
        listing = _listed_after(read_back, pass_.target, threads) if read_back is not None else None
        if read_back is not None and listing is not None:
            listed, rows = listing
            report.read_back = True
            if copied is not None and read_back.top is not None:
                exact.merge(read_back.top)  # the target's rows, as read back, are the truth
            return read_back.sums, rows, read_back.keys.differing(listed)
        if target_scan is not None and copied is not None:
            advance(target_scan.records)  # read beside the index build: the stage's records
            return target_scan.sums, target_scan.records, []  # fed ``exact`` as it read
        # (also when the read-back failed: the target is scanned instead)
        # the target's rows are the exact truth for the queries when the digests agree; where
        # they do not, the bins' source records are read again below
        feed = exact if copied is not None else None
        # read beside the source's scan (no copy's digests), the source's records are the progress
        moved = advance if copied is not None else None
        sums, rows = digests_here(pass_.target, "target", parts, None, feed, moved, threads)
        return sums, rows, []

    if copied is None:
        # both stores at once: they are usually different servers (or one is in-process)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectorport-verify-target") as pool:
            later = pool.submit(target_side)
            expected, _ = digests_here(
                pass_.source, "source", parts, pass_.transformer, exact, advance, threads
            )
            actual, rows, keys_moved = later.result()
    else:
        expected = copied
        actual, rows, keys_moved = target_side()
    report.target_scanned = rows
    differing = sorted(set(expected.differing(actual)) | set(keys_moved))
    report.bins = {"parts": parts, "differing": len(differing)}
    if not differing:
        report.compared = expected.total
        return
    _detail(pass_, parts, frozenset(differing))
    report.compared += expected.total - sum(expected.counts[s] for s in differing)


def _detail(pass_: _Pass, parts: int, wanted: frozenset[int]) -> None:
    """The ``wanted`` key bins compared record by record, each side by a task of this process
    (the tasks the merged verification places, :func:`~._tasks.detail_task`)."""
    common = (parts, wanted, pass_.transformer, pass_.tolerance, pass_.float_ulps, pass_.report.missing.cap)
    calls: list[tuple[Any, ...]] = [
        (pass_.source, pass_.target, {}, {}, side, (0, 1), *common) for side in ("source", "target")
    ]
    d: SegmentDetail
    for d in LocalRunner().map(detail_task, calls):
        fold_detail(pass_.report, d)
