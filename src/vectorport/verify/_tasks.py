"""The verification's tasks, which any runner maps (threads here, Ray tasks elsewhere): the
digest read of one native scan segment of one store (:func:`scan_task`) and the record-by-record
comparison of the key bins whose digests differ (:func:`detail_task`), with how the driver folds
each result into its report.

A task is given each store as a URL (and options), which it opens and closes — what a task in
another process needs —, or as a store this process holds (:data:`Side`), used as it is;
:class:`Placed` says which, and which runner's ``map`` runs the tasks."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .._digest import BinSums, bin_of
from .._exact import StreamingTopK
from .._gc import bulk_allocations
from .._models import JSON
from .._protocol import VectorStore
from .._registry import connect
from .._report import DEFAULT_CAP, Capped
from ..engine._digestscan import DigestScan, digest_segment, parallel_segments
from ..engine._runner import LocalRunner, worker_info
from ..engine._transform import Transformer
from ._judge import DIFFERENCE_KINDS, VECTOR_TOLERANCE, compare_page, fold_page, start_differences
from ._queries import SampledQueries

__all__ = [
    "SCAN_BATCH",
    "Digested",
    "Placed",
    "SegmentDetail",
    "SegmentScan",
    "Side",
    "TargetScan",
    "Tasks",
    "detail_task",
    "digest_sides",
    "digests_here",
    "fold_detail",
    "merge_top",
    "scan_task",
    "segment_calls",
]

Tasks = Callable[[Callable[..., Any], Sequence[tuple[Any, ...]]], Iterable[Any]]
"""A runner's :meth:`~vectorport.engine.Runner.map`: ``fn(*args)`` of every call, yielded as
they finish (in any order), so the driver folds one result at a time."""

SCAN_BATCH = 1000
GET_BATCH = 1000
"""Keys fetched from each store at once in the detailed pass."""

Side = str | VectorStore
"""One store of a verification as a task gets it: a URL it opens (with its options), or a
store of this process."""


@contextmanager
def opened(side: Side, options: Mapping[str, Any]) -> Iterator[VectorStore]:
    """The store of ``side``: opened from its URL (and closed after), or the store given."""
    if not isinstance(side, str):
        yield side
        return
    store = connect(side, **dict(options))
    try:
        yield store
    finally:
        store.close()


@dataclass
class SegmentScan:
    """What one task found in one native scan segment of one store."""

    side: str
    segment: tuple[int, int]
    sums: BinSums
    records: int
    worker: dict[str, Any]
    top_distances: list[npt.NDArray[np.float64]] = field(default_factory=list)
    top_keys: list[npt.NDArray[np.object_]] = field(default_factory=list)


@bulk_allocations()
def scan_task(
    store: Side,
    options: Mapping[str, Any],
    side: str,
    segment: tuple[int, int],
    parts: int,
    transformer: Transformer | None,
    queries: npt.NDArray[np.float32] | None = None,
    size: int = 0,
    advance: Callable[[int], None] | None = None,
    batch_size: int | None = SCAN_BATCH,
) -> SegmentScan:
    """Digest native segment ``segment`` of ``store`` into ``parts`` key bins; records go
    through ``transformer`` first (the source side). With ``queries``, also the exact best
    ``size`` rows of the segment for each. ``advance``: told each page's records (a task of
    this process)."""
    started = time.monotonic()
    with opened(store, options) as opened_store:
        top = None
        if queries is not None and len(queries):
            top = StreamingTopK(opened_store.spec.metric, queries, size)
        read = digest_segment(
            opened_store, transformer, parts, segment, top=top, advance=advance, batch_size=batch_size
        )
    worker = worker_info(f"{side} {segment[0]}/{segment[1]}", read.records, started)
    scan = SegmentScan(side, segment, read.sums, read.records, worker)
    if top is not None:
        scan.top_distances, scan.top_keys = top.distances, top.keys
    return scan


def merge_top(exact: StreamingTopK, scan: SegmentScan) -> None:
    """Fold one segment's best rows into the exact top-k of every query."""
    if not scan.top_distances:
        return
    for i in range(len(exact.queries)):
        d = np.concatenate([exact.distances[i], scan.top_distances[i]])
        k = np.concatenate([exact.keys[i], scan.top_keys[i]])
        order = np.lexsort((k, d))[: exact.size]
        exact.distances[i], exact.keys[i] = d[order], k[order]


def segment_calls(
    store: Side,
    options: Mapping[str, Any],
    side: str,
    segments: int,
    parts: int,
    transformer: Transformer | None,
    exact: StreamingTopK | None,
    *,
    advance: Callable[[int], None] | None = None,
    batch_size: int | None = SCAN_BATCH,
) -> list[tuple[Any, ...]]:
    """The :func:`scan_task` calls that digest every one of ``segments`` native scan segments of
    ``store`` (feeding the best rows for ``exact``'s queries, when given)."""
    queries, size = (exact.queries, exact.size) if exact is not None else (None, 0)
    common = (parts, transformer, queries, size, advance, batch_size)
    return [(store, options, side, (i, segments), *common) for i in range(segments)]


@dataclass
class Digested:
    """Both sides' merged key-bin digests, the records each side's tasks read, and the tasks."""

    sums: dict[str, BinSums]
    records: dict[str, int]
    workers: list[dict[str, Any]] = field(default_factory=list)


def digest_sides(
    tasks: Tasks,
    calls: Sequence[tuple[Any, ...]],
    parts: int,
    exact: StreamingTopK | None,
    on_source: Callable[[int], None] | None = None,
) -> Digested:
    """Run the :func:`scan_task` ``calls`` as ``tasks`` and merge what they found, one result
    at a time as they finish: each side's digests and records, the source side's (or, with
    only target calls, the target's) best rows into ``exact``; ``on_source`` is told each
    source segment's records."""
    out = Digested({side: BinSums(parts) for side in ("source", "target")}, {"source": 0, "target": 0})
    scan: SegmentScan
    for scan in tasks(scan_task, calls):
        out.sums[scan.side].merge(scan.sums)
        out.records[scan.side] += scan.records
        out.workers.append(scan.worker)
        if exact is not None:
            merge_top(exact, scan)
        if scan.side == "source" and on_source is not None:
            on_source(scan.records)
    return out


def digests_here(
    store: VectorStore,
    side: str,
    parts: int,
    transformer: Transformer | None,
    exact: StreamingTopK | None,
    advance: Callable[[int], None] | None,
    concurrency: int,
) -> tuple[BinSums, int]:
    """One store of this process digested by the scan tasks (:meth:`Placed.scan_calls`); its
    key-bin digests and the records read."""
    placed = Placed.here(store, store)
    calls = placed.scan_calls(side, parts, transformer, exact, advance, concurrency)
    got = digest_sides(placed.tasks, calls, parts, exact)
    return got.sums[side], got.records[side]


@dataclass
class Placed:
    """Where a verification's scan and detail tasks run and how they reach each store: the
    runner's ``tasks`` (its :meth:`~vectorport.engine.Runner.map`) and each store as a
    :data:`Side` — URLs with their options, each task opening its own stores (a placement's
    tasks in other processes), or the stores of this process (threads, :meth:`here`) —; and
    what the tasks did (``workers``, ``timings``: a merged report's fields)."""

    tasks: Tasks
    source: Side
    target: Side
    source_options: Mapping[str, Any] = field(default_factory=dict)
    target_options: Mapping[str, Any] = field(default_factory=dict)
    segments: int | None = None
    """Native scan segments each store is read in, one task each, and its detail read in;
    ``None`` (this process): as many as each store reads at once
    (:func:`~vectorport.engine._digestscan.parallel_segments`), its detail in one."""
    workers: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @classmethod
    def here(cls, source: VectorStore, target: VectorStore) -> Placed:
        """The stores of this process, their tasks on its threads."""
        return cls(LocalRunner().map, source, target)

    @property
    def remote(self) -> bool:
        """Whether each task opens its own stores (from their URLs)."""
        return isinstance(self.source, str) or isinstance(self.target, str)

    def scan_calls(
        self,
        side: str,
        parts: int,
        transformer: Transformer | None,
        exact: StreamingTopK | None,
        advance: Callable[[int], None] | None,
        concurrency: int,
    ) -> list[tuple[Any, ...]]:
        """The :func:`scan_task` calls that digest ``side``'s store; in this process ``advance``
        is told each page's records, as it is read."""
        store, options = self.store(side)
        if self.segments is not None:
            return segment_calls(store, options, side, self.segments, parts, transformer, exact)
        assert not isinstance(store, str)  # a URL comes with the placement's segments
        segments = parallel_segments(store, concurrency)
        return segment_calls(
            store, {}, side, segments, parts, transformer, exact, advance=advance, batch_size=None
        )

    def detail_calls(self, common: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """The :func:`detail_task` calls: each side's segments (one in this process), with
        ``common`` (the key bins, what they are compared with)."""
        n = self.segments or 1
        ends = (self.source, self.target, self.source_options, self.target_options)
        return [(*ends, side, (i, n), *common) for side in ("source", "target") for i in range(n)]

    def store(self, side: str) -> tuple[Side, Mapping[str, Any]]:
        """``side``'s store as the tasks get it, and its options."""
        if side == "source":
            return self.source, self.source_options
        return self.target, self.target_options


@dataclass
class SegmentDetail:
    """The differences one task found among the differing key bins of one native segment."""

    side: str
    segment: tuple[int, int]
    keys: int = 0
    """Keys of the differing key bins read from this side."""
    compared: int = 0
    duplicates: int = 0
    missing: Capped[str] = field(default_factory=Capped)
    extra: Capped[str] = field(default_factory=Capped)
    vectors: Capped[dict[str, JSON]] = field(default_factory=Capped)
    metadata: Capped[dict[str, JSON]] = field(default_factory=Capped)
    text: Capped[dict[str, JSON]] = field(default_factory=Capped)
    worker: dict[str, Any] = field(default_factory=dict)


def _wanted_keys(
    store: VectorStore, segment: tuple[int, int], parts: int, wanted: frozenset[int]
) -> Iterator[list[str]]:
    """Pages of the keys of native segment ``segment`` that fall in the ``wanted`` key bins."""
    pending: list[str] = []
    for page in store.scan(batch_size=SCAN_BATCH, include=[], segment=segment):
        pending.extend(r.key for r in page.records if bin_of(r.key, parts) in wanted)
        while len(pending) >= GET_BATCH:
            yield pending[:GET_BATCH]
            pending = pending[GET_BATCH:]
    if pending:
        yield pending


def detail_task(
    source: Side,
    target: Side,
    source_options: Mapping[str, Any],
    target_options: Mapping[str, Any],
    side: str,
    segment: tuple[int, int],
    parts: int,
    wanted: frozenset[int],
    transformer: Transformer | None,
    tolerance: float = VECTOR_TOLERANCE,
    float_ulps: int = 0,
    cap: int = DEFAULT_CAP,
) -> SegmentDetail:
    """Compare the records of the ``wanted`` key bins found in native segment ``segment``
    of one side: on the source side every such record with the target's record of its key
    (missing, vectors, metadata, text); on the target side, which of its keys the source lacks
    (extra) and keys scanned twice (duplicates)."""
    started = time.monotonic()
    detail = SegmentDetail(side, segment)
    start_differences(detail, cap)
    with opened(source, source_options) as src, opened(target, target_options) as dst:
        if side == "source":
            _detail_source(detail, src, dst, parts, wanted, transformer, tolerance, float_ulps)
        else:
            _detail_target(detail, src, dst, parts, wanted)
    detail.worker = worker_info(f"detail {side} {segment[0]}/{segment[1]}", detail.keys, started)
    return detail


def _detail_source(
    detail: SegmentDetail,
    source: VectorStore,
    target: VectorStore,
    parts: int,
    wanted: frozenset[int],
    transformer: Transformer | None,
    tolerance: float,
    float_ulps: int,
) -> None:
    """Each wanted source record against the target's record of its key."""
    for keys in _wanted_keys(source, detail.segment, parts, wanted):
        detail.keys += len(keys)
        page = source.get(keys, include=["vector", "metadata", "text"])
        fold_page(detail, compare_page(page, target, transformer, True, tolerance, float_ulps))


def _detail_target(
    detail: SegmentDetail, source: VectorStore, target: VectorStore, parts: int, wanted: frozenset[int]
) -> None:
    """The wanted target keys the source lacks (extra), and keys scanned twice (duplicates)."""
    seen: set[str] = set()
    for keys in _wanted_keys(target, detail.segment, parts, wanted):
        detail.keys += len(keys)
        fresh = [k for k in keys if k not in seen]
        detail.duplicates += len(keys) - len(fresh)
        seen.update(fresh)
        known = {r.key for r in source.get(list(dict.fromkeys(fresh)), include=[])}
        for key in fresh:
            if key not in known:
                detail.extra.add(key)


def fold_detail(report: Any, detail: SegmentDetail) -> None:
    """Add what one detail task found to ``report`` (a :class:`~._verify.VerifyReport`)."""
    report.compared += detail.compared
    report.duplicates += detail.duplicates
    for kind in DIFFERENCE_KINDS:
        _merge_capped(getattr(report, kind), getattr(detail, kind))


def _merge_capped(into: Capped[Any], part: Capped[Any]) -> None:
    for item in part.items:
        if len(into.items) < into.cap:
            into.items.append(item)
    into.total += part.total


BACKGROUND_NICE = 10
"""How much lower than the process the target read's thread runs (Linux: a thread's nice value
is its own): the index build it overlaps takes the CPU first, the read takes what the build
leaves idle. At 10k x 384 on 2 cores the run's index phase went from 1.2-1.38 s to 1.17-1.28 s
(six runs each way); at 30k the read still ended before the build did."""


def _background_priority() -> None:
    """Lower this thread's scheduling priority by :data:`BACKGROUND_NICE` where the system
    schedules threads by their own nice value (Linux); elsewhere nothing changes."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(OSError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE)


class TargetScan:
    """The verification's one read of the whole target (:func:`digests_here`: per-bin content
    digests, the rows fed to the sampled queries' exact top-k), started by :meth:`start` once
    the copy's last write is acknowledged, in a thread, while the target finishes its deferred
    work, at a lower priority than the build (:data:`BACKGROUND_NICE`). ``pick`` picks the
    sampled queries there first (a read of the source's first page, which then costs the run
    no time of its own).

    At 30k x 384 into embedded pgvector that read took 2-4 s after the index build; it now
    runs beside it. :meth:`result` waits for it (and raises its error); :attr:`queries` are
    the queries it picked. :meth:`close`, on a failed run, waits for a started read to end, so
    the stores are never closed under it.
    """

    def __init__(
        self,
        target: VectorStore,
        parts: int,
        *,
        pick: Callable[[], SampledQueries] | None = None,
        concurrency: int = 4,
    ) -> None:
        self.target = target
        self.parts = parts
        self.pick = pick
        self.queries: SampledQueries | None = None
        self.concurrency = concurrency
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vectorport-verify-target")
        self._read: Future[DigestScan] | None = None

    def start(self) -> None:
        """Read the target from now on (once)."""
        if self._read is None:
            self._read = self._pool.submit(self._digests)

    def _digests(self) -> DigestScan:
        _background_priority()
        if self.pick is not None:
            self.queries = self.pick()
        exact = self.queries.exact if self.queries is not None else None
        sums, rows = digests_here(self.target, "target", self.parts, None, exact, None, self.concurrency)
        return DigestScan(sums, rows)

    def result(self) -> DigestScan | None:
        """What the read found (``None``: never started, the copy did not finish); its thread
        is gone after."""
        try:
            return self._read.result() if self._read is not None else None
        finally:
            self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
