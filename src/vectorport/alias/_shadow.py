"""Shadow reads: a sample of the app's queries asked again of the other members, off the request
path, and compared with the answer the app was served.

The app's call only offers the query to a bounded queue (``put_nowait``): when the queue is full
the query is dropped and counted, never waited for. One daemon thread per alias store asks each
non-serving member, in a pause between the app's calls where it finds one (:mod:`._idle`),
compares (overlap@k, rank-biased overlap, top-1 agreement, score difference, both latencies — the
measures of :mod:`vectorport.compare._metrics`), and writes the rows to the registry's bounded
shadow log about once a second, on a registry connection of its own (the app's calls never wait
for that write). A member that fails is counted as an error row; nothing here reaches the app. The
same thread runs the repair queue (``periodic``).

A member of another embedding model (:mod:`._embedding`) is asked with the query's text embedded
by its own model; a query that came as a vector only is never sent to it (counted as
``other_model``): its answer would be to a vector of another space. When the models differ the
overlap with the served answer is information about the new model, not a test of the copy.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._models import Include, QueryResult
from .._protocol import VectorStore
from ..compare._metrics import overlap_at_k, rank_biased_overlap
from ..exceptions import VectorportError
from ..filters import And, Compare, Exists, FilterNode, In, Not, Or
from ._embedding import Embedders, other_model
from ._idle import Activity
from ._registry import Registry, ShadowRow
from ._routing import Routing

__all__ = ["QUEUE_SIZE", "Shadow", "ShadowQuery", "compare_answers", "shape_of"]

log = logging.getLogger("vectorport.alias")

QUEUE_SIZE = 256
"""Shadow queries waiting at most; more are dropped (and counted)."""
FLUSH_INTERVAL = 1.0
"""Seconds between two writes of the shadow log and counters to the registry."""


def shape_of(node: FilterNode | None) -> str:
    """A filter's shape: its fields and operators without values, so that queries are grouped by
    the kind of filter they carry.

    >>> from vectorport.filters import parse_filter
    >>> shape_of(parse_filter({"$and": [{"lang": "en"}, {"year": {"$gte": 2020}}]}))
    '$and(lang $eq, year $gte)'
    >>> shape_of(None)
    '(none)'
    """
    if node is None:
        return "(none)"
    if isinstance(node, Compare | In | Exists):
        return f"{node.field} {node.operator}"
    if isinstance(node, And | Or):
        return f"{node.operator}({', '.join(sorted(shape_of(c) for c in node.children))})"
    if isinstance(node, Not):
        return f"$not({shape_of(node.child)})"
    return type(node).__name__  # pragma: no cover - every node type is above


@dataclass(frozen=True)
class ShadowQuery:
    """A served query, waiting to be asked of the other members."""

    routing: Routing
    vector: Any
    k: int
    where: FilterNode | None
    params: Mapping[str, Any]
    served: QueryResult
    serving_ms: float
    at: float
    text: str | None = None
    """The query's text when the app asked by text (a member of another model embeds it)."""
    include: tuple[Include, ...] = ()
    """What the app asked the serving store to return: the candidate is asked for the same, so
    the two latencies the p99 gate compares are of the same work."""


def compare_answers(
    served: QueryResult, other: QueryResult, k: int
) -> tuple[float, float, float, float | None]:
    """``(overlap@k, rank-biased overlap, top-1 agreement, mean |score difference|)`` of another
    member's answer against the served one (the score difference over the keys both hold)."""
    a, b = served.keys, other.keys
    top1 = 1.0 if (a[:1] == b[:1]) else 0.0
    theirs = {m.key: m.score for m in other.matches}
    both = [abs(m.score - theirs[m.key]) for m in served.matches if m.key in theirs]
    diff = sum(both) / len(both) if both else None
    return overlap_at_k(a, b, k), rank_biased_overlap(a, b), top1, diff


def _failed(query: ShadowQuery, url: str, error: str) -> ShadowRow:
    row = ShadowRow(
        url, query.at, shape_of(query.where), query.k, None, None, None, None, query.serving_ms, None
    )
    return _replace_error(row, error)


def _ask(query: ShadowQuery, url: str, store: VectorStore | None, warm: set[str]) -> ShadowRow:
    if store is None:
        why = query.routing.down.get(url, "could not be opened")
        return _failed(query, url, f"member down: {why}")
    started = time.perf_counter()
    asked = list(query.include)
    try:
        if url not in warm:  # a member's first query opens connections: not its latency
            store.query(query.vector, query.k, filter=query.where, include=asked, params=query.params)
            warm.add(url)
            started = time.perf_counter()
        other = store.query(query.vector, query.k, filter=query.where, include=asked, params=query.params)
    except VectorportError as exc:
        return _failed(query, url, f"{type(exc).__name__}: {exc}")
    ms = (time.perf_counter() - started) * 1000
    overlap, rbo, top1, diff = compare_answers(query.served, other, query.k)
    return ShadowRow(
        url, query.at, shape_of(query.where), query.k, overlap, rbo, top1, diff, query.serving_ms, ms
    )


def _replace_error(row: ShadowRow, error: str) -> ShadowRow:
    return ShadowRow(
        row.member, row.at, row.shape, row.k, None, None, None, None, row.serving_ms, None, error[:500]
    )


class Shadow:
    """The bounded queue and the thread that asks, compares and records."""

    def __init__(
        self,
        registry: Registry,
        name: str,
        periodic: Callable[[Registry], None],
        embedders: Embedders,
        size: int = QUEUE_SIZE,
        *,
        activity: Activity | None = None,
    ) -> None:
        self._origin = registry
        self._activity = activity
        """The app's calls in flight (:mod:`._idle`): members are asked between them."""
        self.registry: Registry | None = None
        """The thread's own connection to the registry (:meth:`Registry.fork`): its writes never
        hold the lock of the connection the app's calls read the version on."""
        self.embedders = embedders
        self._other: dict[str, int] = {}
        self.name = name
        self._periodic = periodic
        self._queue: queue.Queue[ShadowQuery | None] = queue.Queue(maxsize=size)
        self._rows: list[ShadowRow] = []
        self._dropped: dict[str, int] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._warm: set[str] = set()

    def offer(self, query: ShadowQuery) -> None:
        """Queue a served query for the other members; when the queue is full, drop and count."""
        if self._thread is None:
            self._start()
        try:
            self._queue.put_nowait(query)
        except queue.Full:
            with self._lock:
                for member in query.routing.state.others:
                    self._dropped[member.url] = self._dropped.get(member.url, 0) + 1

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"alias-{self.name}", daemon=True)
                self._thread.start()

    def start(self) -> None:
        """Start the thread (the repair queue runs even when nothing is shadowed)."""
        if self._thread is None:
            self._start()

    def drained(self, timeout: float) -> bool:
        """Wait until every query offered so far has been asked (at most ``timeout`` seconds);
        whether it has. (Benchmarks: another side's timing starts on an idle thread.)"""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        return not self._queue.unfinished_tasks

    def _run(self) -> None:
        flushed = time.monotonic()
        while not self._stop.is_set():
            got = True
            try:
                job = self._queue.get(timeout=FLUSH_INTERVAL / 2)
            except queue.Empty:
                job, got = None, False
            try:
                if job is not None:
                    self._rows.extend(self._asked(job))
                if time.monotonic() - flushed >= FLUSH_INTERVAL:
                    flushed = time.monotonic()
                    self._flush()
            except Exception as exc:  # the thread serves for the app's lifetime: log, go on
                log.warning("alias %s: shadow thread: %s: %s", self.name, type(exc).__name__, exc)
            finally:
                if got:
                    self._queue.task_done()
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                self._rows.extend(self._asked(job))
            self._queue.task_done()
        self._flush()

    def _asked(self, job: ShadowQuery) -> list[ShadowRow]:
        """The rows of one shadowed query: each backfilled member asked in its own model."""
        rows: list[ShadowRow] = []
        serving = job.routing.state.serving
        for member, store in job.routing.shadowed():
            query = job
            if other_model(member, serving):
                if job.text is None:
                    with self._lock:
                        self._other[member.url] = self._other.get(member.url, 0) + 1
                    continue
                try:
                    query = replace(job, vector=self.embedders.of(member).embed_query(job.text))
                except VectorportError as exc:
                    rows.append(_failed(job, member.url, f"{type(exc).__name__}: {exc}"))
                    continue
            if self._activity is not None:
                self._activity.wait_idle()
            rows.append(_ask(query, member.url, store, self._warm))
        return rows

    def _flush(self) -> None:
        with self._lock:
            rows, self._rows = self._rows, []
            dropped, self._dropped = self._dropped, {}
            other, self._other = self._other, {}
        try:
            if self.registry is None:
                self.registry = self._origin.fork()
            # the log, its trim and the counters in one transaction, once a second
            self.registry.add_shadow(self.name, rows, _errors(rows, dropped, other))
            self._periodic(self.registry)
        except VectorportError as exc:  # the registry is down: keep the newest rows for later
            log.warning("alias %s: shadow log not written: %s", self.name, exc)
            with self._lock:
                self._rows = (rows + self._rows)[-QUEUE_SIZE * 4 :]

    def close(self) -> None:
        """Stop the thread after it has asked what is queued and written the log."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._queue.put(None)
            thread.join(timeout=30)
        registry, self.registry = self.registry, None
        if registry is not None:
            registry.close()


def _errors(
    rows: Iterable[ShadowRow], dropped: dict[str, int], other: dict[str, int]
) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {url: {"dropped": n} for url, n in dropped.items()}
    for url, n in other.items():
        counts.setdefault(url, {})["other_model"] = n
    for row in rows:
        mine = counts.setdefault(row.member, {})
        mine["shadowed"] = mine.get("shadowed", 0) + 1
        if row.error:
            mine["errors"] = mine.get("errors", 0) + 1
    return counts
