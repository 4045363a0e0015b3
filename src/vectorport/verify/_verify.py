"""Verification: is the target the source, after the declared transforms?

One driver, :func:`verify_stores`, runs every verification in one order — the collections'
definitions, the sampled queries (picked and asked), the counts, the data pass, the query
check —, wherever its tasks run: the scan and detail tasks of :mod:`._tasks` are placed by a
:class:`~._tasks.Placed`, threads of this process over the opened stores (which can also use
what a migration's copy knows: its digests, its read-back, its early read of the target), or a
runner's tasks given the stores as URLs, each opening its own (:func:`~._merged.verify_merged`,
``--engine ray``). Two methods, with the same report:

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

Then counts (in the digest method, a store without a native count — a bucket — is counted by
the read it gets anyway), and sampled queries against both stores judged against the exact
top-k computed from the same pass (:mod:`._queries`). Memory: one page per worker plus, in the
keyed method, an 8-byte hash per key; in the digest method 24 bytes per key bin. Tasks placed
elsewhere always use the digest method (no process holds the keys).
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

from .._digest import MAX_BINS, BinSums, bin_count
from .._exact import StreamingTopK
from .._exit import Status
from .._features import Feature
from .._gc import bulk_allocations
from .._models import JSON
from .._protocol import VectorStore
from .._report import DEFAULT_CAP, Capped, Report
from .._textsearch import canonical_language
from ..engine._digestscan import DigestScan
from ..engine._progress import Progress, ProgressMode
from ..engine._transform import Transformer
from ..exceptions import ConfigurationError
from ..migrate._readback import ReadBack, list_key_sums
from ._judge import (
    VECTOR_TOLERANCE,
    PageResult,
    compare_page,
    fold_page,
    key_hashes,
    same_content,
    start_differences,
    vector_difference,
)
from ._queries import Answers, QueryCheck, SampledQueries, ask_queries, query_check, sampled_queries
from ._tasks import Digested, Placed, SegmentDetail, detail_task, digest_sides, fold_detail

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


@dataclass
class _Run:
    """One verification as its methods see it: the report being filled, the two stores as the
    driver holds them, where the scan and detail tasks run (:class:`~._tasks.Placed`), the
    transform and the rules of equality, the sampled queries' exact top-k and the progress."""

    report: VerifyReport
    source: VectorStore
    target: VectorStore
    placed: Placed
    transformer: Transformer | None
    compare_vectors: bool
    tolerance: float
    float_ulps: int
    concurrency: int
    exact: StreamingTopK
    advance: Callable[[int], None]
    hashes: list[npt.NDArray[np.uint64]] = field(default_factory=list)
    """The keyed method's hashes of the source keys it compared."""


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
    placed: Placed | None = None,
    report: VerifyReport | None = None,
) -> VerifyReport:
    """Compare ``target`` with ``source`` (after ``transformer``): the one driver of every
    verification (collection definitions, sampled queries, counts, the data pass by digest or
    by key, the query check); see the module docstring.

    ``copied``: the copy's digests of what it wrote (:func:`vectorport.migrate.run` with
    ``single_pass``); the source is then not read again unless a key bin differs.
    ``method``: ``digest``, ``keyed`` or ``auto`` (digest where it applies).
    ``read_back``: the target's records as the copy read them back (:mod:`._readback`); the
    target is then only listed, without vectors. ``target_scan``: the target's digests, read
    whole by the run since its copy ended (with ``copied``; :class:`~._tasks.TargetScan`).
    ``queries``: the sampled queries, when the copy's read-back or ``target_scan`` already fed
    their exact top-k (else picked here). ``placed``: where the scan and detail tasks run and
    how they reach the stores (default: threads over these; URLs: each task opens its own).
    ``report``: an empty report to fill (a :class:`~._merged.MergedVerifyReport`).
    """
    if method not in ("auto", "digest", "keyed"):  # before any read
        raise ConfigurationError(f"verification method must be auto, digest or keyed, got {method!r}")
    started = time.monotonic()
    placed = placed if placed is not None else Placed.here(source, target)
    labels = (source_label or source.url.masked, target_label or target.url.masked)
    report = report if report is not None else VerifyReport(*labels, shard)
    _start_report(report, source, target, cap, compare_vectors)
    queries, answers = _queries(report, source, target, shard, compare_vectors, sample_queries, k, queries)
    report.method = _method(method, shard[1] > 1, compare_vectors, target, tolerance, copied, placed.remote)
    _count(report, source, target, shard[1] > 1, copied, read_back is not None or target_scan is not None)
    # a float read back from either store may differ by the ulps its backend declares (Chroma
    # parses numbers with a fast, not correctly rounded, algorithm): that is not a difference
    float_ulps = source.capabilities.metadata.float_ulps + target.capabilities.metadata.float_ulps
    judging = (transformer, compare_vectors, tolerance, float_ulps, max(1, concurrency), queries.exact)
    with Progress("verify", total_hint or report.source_count, enabled=progress) as bar:
        run = _Run(report, source, target, placed, *judging, bar.advance)
        _data_pass(run, shard, copied, read_back, target_scan)
    if answers is not None:
        _query_check(report, target, queries, answers, placed)
    report.seconds = time.monotonic() - started
    return report


def _data_pass(
    run: _Run,
    shard: tuple[int, int],
    copied: BinSums | None,
    read_back: ReadBack | None,
    target_scan: DigestScan | None,
) -> None:
    """Every record compared, by key or by digest (the method the report names)."""
    report, sharded = run.report, shard[1] > 1
    if report.method == "keyed":
        _keyed(run, shard)
        if not sharded:
            _extras(run)
        return
    _by_digest(run, copied, read_back, target_scan)
    if report.target_count is None and not sharded:
        report.target_count = report.target_scanned


def _count(
    report: VerifyReport,
    source: VectorStore,
    target: VectorStore,
    sharded: bool,
    copied: BinSums | None,
    target_read: bool,
) -> None:
    """Both stores' counts (a shard has none). Where the digest method reads a store whole
    anyway, a count that would be another listing of it (a bucket's: no native count) is what
    that read found (filled in by the data pass), and so is the target's when the run read it
    whole already (``target_read``: a read-back's key listing, the run's target scan)."""
    if sharded:
        return
    keyed = report.method == "keyed"
    if keyed or copied is not None or Feature.NATIVE_COUNT in source.capabilities.features:
        report.source_count = source.count()
    if keyed or (not target_read and Feature.NATIVE_COUNT in target.capabilities.features):
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
) -> tuple[SampledQueries, Callable[[], Answers] | None]:
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


def _query_check(
    report: VerifyReport,
    target: VectorStore,
    queries: SampledQueries,
    answers: Callable[[], Answers],
    placed: Placed,
) -> None:
    """The sampled queries' answers, once both stores gave them, judged against the exact top-k
    the data pass computed."""
    started = time.monotonic()
    cap = report.missing.cap
    report.queries = query_check(target, queries.records, queries.exact, queries.k, cap, answers())
    placed.timings["queries"] = time.monotonic() - started


def _start_report(
    report: VerifyReport, source: VectorStore, target: VectorStore, cap: int, compare_vectors: bool
) -> None:
    """``report``'s empty lists of differences, how the collections' definitions differ,
    and which checks this verification leaves out."""
    start_differences(report, cap)
    report.collection = collection_differences(source, target, compare_vectors)
    if report.shard[1] > 1:
        report.skipped.append(
            "counts, extra keys and queries: a shard is verified for its own source records only"
        )
    if not compare_vectors:
        report.skipped.append("vectors and queries: the vectors were re-embedded")


def _method(
    asked: str,
    sharded: bool,
    compare_vectors: bool,
    target: VectorStore,
    tolerance: float,
    copied: BinSums | None,
    remote: bool,
) -> str:
    if remote:  # tasks that open their own stores merge per-segment digests: no keyed pass
        return "digest"
    if asked == "keyed":
        return "keyed"
    # digests need the target to hold values as written; floats read from a source that
    # rounds them (Chroma) were written as read, so only the target's rule decides
    float_ulps = target.capabilities.metadata.float_ulps
    # digests compare bytes: a target that may round floats (Chroma), re-embedded vectors or a
    # looser vector tolerance would differ everywhere and every bin would be re-read
    fits = not sharded and compare_vectors and float_ulps == 0 and tolerance <= VECTOR_TOLERANCE
    if asked == "digest" and not fits and copied is None:
        return "keyed"
    return "digest" if fits or (copied is not None and not sharded) else "keyed"


def _keyed(run: _Run, shard: tuple[int, int]) -> None:
    """The keyed method: the source streamed (its ``shard``), each page's keys fetched from the
    target and judged (:func:`~._judge.compare_page`), ``concurrency`` pages at once."""
    include = ["vector", "metadata", "text"] if run.compare_vectors else ["metadata", "text"]
    judged = (run.target, run.transformer, run.compare_vectors, run.tolerance, run.float_ulps)

    def fold(fut: Future[PageResult], n: int) -> None:
        res = fut.result()
        run.hashes.append(res.hashes)
        fold_page(run.report, res)
        run.advance(n)

    with ThreadPoolExecutor(max_workers=run.concurrency, thread_name_prefix="vectorport-verify") as pool:
        inflight: deque[tuple[Future[PageResult], int]] = deque()
        for page in run.source.scan(include=include, segment=shard):
            if run.compare_vectors:
                run.exact.update_records(page.records)
            inflight.append((pool.submit(compare_page, page.records, *judged), len(page)))
            while len(inflight) > run.concurrency:
                fold(*inflight.popleft())
        while inflight:
            fold(*inflight.popleft())


def _extras(run: _Run) -> None:
    """The keyed method's last step: target keys the source pass did not see (by the 8-byte
    hashes of the keys it compared), and keys the target holds twice."""
    report = run.report
    known = np.sort(np.concatenate(run.hashes)) if run.hashes else np.empty(0, dtype=np.uint64)
    seen: list[npt.NDArray[np.uint64]] = []
    scanned = 0
    for page in run.target.scan(include=[]):
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


def _by_digest(
    run: _Run, copied: BinSums | None, read_back: ReadBack | None, target_scan: DigestScan | None
) -> None:
    """The digest method: both sides as per-key-bin digests (the source's from the copy when
    given, the target's from the copy's read-back and one key listing, or from the run's target
    scan, when given; else read by the placement's scan tasks); the bins that differ are then
    compared record by record by its detail tasks, and only they."""
    report = run.report
    if copied is not None:
        parts = copied.parts
    elif read_back is not None:
        parts = read_back.parts
    else:  # without a count (buckets), the most bins: a differing one then costs the fewest reads
        parts = MAX_BINS if report.source_count is None else bin_count(report.source_count)
    started = time.monotonic()
    expected, actual, rows, keys_moved = _digests(run, parts, copied, read_back, target_scan)
    run.placed.timings["digest"] = time.monotonic() - started
    report.target_scanned = rows
    differing = sorted(set(expected.differing(actual)) | set(keys_moved))
    report.bins = {"parts": parts, "differing": len(differing)}
    report.compared += expected.total - int(sum(int(expected.counts[s]) for s in differing))
    if differing:
        _detail(run, parts, frozenset(differing))


def _digests(
    run: _Run,
    parts: int,
    copied: BinSums | None,
    read_back: ReadBack | None,
    target_scan: DigestScan | None,
) -> tuple[BinSums, BinSums, int, list[int]]:
    """The source's digests and the target's, the target's rows, and the key bins whose keys
    changed since the read-back; the two sides read at once (they are usually different
    servers, or one is in-process)."""
    if copied is not None:
        return (copied, *_target_side(run, parts, copied, read_back, target_scan))
    if read_back is None:
        got = _scan(run, parts, ("source", "target"), fed="source")
        return got.sums["source"], got.sums["target"], got.records["target"], []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectorport-verify-target") as pool:
        later = pool.submit(_target_side, run, parts, None, read_back, None)
        expected = _scan(run, parts, ("source",), fed="source").sums["source"]
        return (expected, *later.result())


def _target_side(
    run: _Run,
    parts: int,
    copied: BinSums | None,
    read_back: ReadBack | None,
    target_scan: DigestScan | None,
) -> tuple[BinSums, int, list[int]]:
    """The target's content digests, rows, and bins whose keys changed since the read-back:
    from what the run read (its read-back and one key listing; its target scan) or a scan."""
    if read_back is not None:
        listing = _listed_after(read_back, run.target, run.concurrency)
        if listing is not None:
            listed, rows = listing
            run.report.read_back = True
            if copied is not None and read_back.top is not None:
                run.exact.merge(read_back.top)  # the target's rows, as read back, are the truth
            return read_back.sums, rows, read_back.keys.differing(listed)
    if target_scan is not None and copied is not None:
        run.advance(target_scan.records)  # read beside the index build: the stage's records
        return target_scan.sums, target_scan.records, []  # fed ``exact`` as it read
    # (also when the read-back failed: the target is scanned instead). With the copy's
    # digests, the target's rows are the exact truth for the queries and its records the
    # progress; where they differ, the bins' source records are read again by the detail
    got = _scan(run, parts, ("target",), fed="target" if copied is not None else None)
    return got.sums["target"], got.records["target"], []


def _scan(run: _Run, parts: int, sides: tuple[str, ...], fed: str | None) -> Digested:
    """``sides``' stores digested by the placement's scan tasks (the source's records through
    the transform); the ``fed`` side's rows feed the exact top-k and its records the progress.
    A source count the run left to this read is what it found."""
    placed, calls = run.placed, []
    for side in sides:
        feeds = side == fed
        transformer = run.transformer if side == "source" else None
        exact, advance = (run.exact, run.advance) if feeds else (None, None)
        calls += placed.scan_calls(side, parts, transformer, exact, advance, run.concurrency)
    # tasks elsewhere tell their records as each ends; those of this process, page by page
    on_source = run.advance if placed.remote and fed == "source" else None
    got = digest_sides(placed.tasks, calls, parts, run.exact, on_source=on_source)
    placed.workers.extend(got.workers)
    if "source" in sides and run.report.source_count is None:
        run.report.source_count = got.records["source"]
    return got


def _listed_after(read_back: ReadBack, target: VectorStore, concurrency: int) -> tuple[BinSums, int] | None:
    """The target's key listing, made while the read-back finishes its last batches (the copy
    has written everything by now); ``None`` when the read-back failed."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectorport-verify-list") as pool:
        later = pool.submit(list_key_sums, target, read_back.parts, concurrency)
        read_back.join()
        listing = later.result()
    return listing if read_back.usable else None


def _detail(run: _Run, parts: int, wanted: frozenset[int]) -> None:
    """The ``wanted`` key bins compared record by record by the placement's detail tasks
    (:func:`~._tasks.detail_task`), each folded into the report as it ends."""
    started = time.monotonic()
    common = (parts, wanted, run.transformer, run.tolerance, run.float_ulps, run.report.missing.cap)
    d: SegmentDetail
    for d in run.placed.tasks(detail_task, run.placed.detail_calls(common)):
        run.placed.workers.append(d.worker)
        fold_detail(run.report, d)
    run.placed.timings["detail"] = time.monotonic() - started
