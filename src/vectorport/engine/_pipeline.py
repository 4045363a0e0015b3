"""The one acknowledged-write pipeline: read ahead, write batches concurrently, acknowledge in
order. The migration's copy (:mod:`vectorport.migrate._records`), sync's scan pass
(:mod:`vectorport.sync._pass`) and its capture pass (:mod:`vectorport.sync._capture`) all write
through it; what each does with an acknowledgement (move a checkpoint's cursor, record digests
in a sync state) is theirs.

A *unit* (a scan page, a batch of captured changes) is cut into write batches, which a thread
pool writes, at most ``window`` at a time. A unit is acknowledged once every batch cut from it
was written **and** every unit submitted before it was acknowledged, so whoever records
progress from the acknowledgements never records past a record the target does not hold. The
first failed batch stops new writes; :meth:`Acknowledged.close` waits for the batches in flight
and hands over the units acknowledged up to the failure, then the error is raised by the caller
(:attr:`Acknowledged.error`). Writes are idempotent upserts, so a batch written again after a
resume leaves one record.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from .._models import Record, ScanPage
from .._protocol import VectorStore
from .._retry import RetryPolicy, retry_scope
from ..exceptions import TransientError

__all__ = ["Acknowledged", "prefetched", "upserting"]

U = TypeVar("U")
B = TypeVar("B")


@dataclass
class _Pending(Generic[U]):
    """A unit waiting for its batches: how many are not written yet."""

    unit: U
    left: int


class Acknowledged(Generic[U, B]):
    """Units of write batches, written by ``concurrency`` threads, acknowledged in order (see the
    module docstring). ``write(batch)`` writes one batch; ``on_batch(batch)`` runs in the writer
    thread once it is written (progress, a read-back). At most ``window`` batches (default
    ``2 * concurrency``) and ``units`` units (default: no bound) wait for acknowledgement.

    Acknowledged units go to ``on_unit`` when given, called in order under the pipeline's lock
    by the writer thread that completes them (so a ``KeyboardInterrupt`` in the caller's thread
    never cuts one in half); otherwise the caller takes them with :meth:`acknowledged` (in its
    own thread: a state only that thread may touch, such as a SQLite connection)."""

    def __init__(
        self,
        write: Callable[[B], None],
        *,
        concurrency: int,
        window: int | None = None,
        units: int | None = None,
        on_batch: Callable[[B], None] | None = None,
        on_unit: Callable[[U], None] | None = None,
        name: str = "vectorport-write",
    ) -> None:
        self.write, self.on_batch, self.on_unit = write, on_batch, on_unit
        self.max_units = units
        self.pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix=name)
        self.room = threading.BoundedSemaphore(window or max(2, 2 * concurrency))
        self.units: deque[_Pending[U]] = deque()
        self.error: BaseException | None = None
        self._lock = threading.RLock()
        self._settled = threading.Condition(self._lock)

    def submit(self, unit: U, batches: Iterable[B]) -> bool:
        """Queue ``unit``'s batches, waiting for room in the window; False (and nothing more
        queued) once a batch has failed.

        ``batches`` may be lazy: each batch goes to the writers as soon as it is made, so a
        unit's first batches are written while its last ones are still being prepared (a
        page's checks). The unit is acknowledged only once ``batches`` is exhausted and every
        batch made was written; when making one raises, the unit is never acknowledged (nor
        any after it) and the error propagates."""
        self._wait_for_units()
        pending = _Pending(unit, 1)  # held until every batch was made
        with self._lock:
            self.units.append(pending)
        for batch in batches:
            if not self._wait_for_room():
                return False
            with self._lock:
                pending.left += 1
            fut = self.pool.submit(self._one, batch)
            fut.add_done_callback(functools.partial(self._finished, pending))
        with self._lock:
            pending.left -= 1
        self._settle()
        return self.error is None

    def acknowledged(self) -> Iterator[U]:
        """The units acknowledged since the last call, in the order they were submitted (none
        when they go to ``on_unit``)."""
        while self.on_unit is None:
            with self._lock:
                if not (self.units and self.units[0].left == 0):
                    return
                unit = self.units.popleft().unit
            yield unit

    def close(self) -> list[U]:
        """Wait for every batch in flight; the units acknowledged since the last call, up to the
        first failure (:attr:`error` says which, if any)."""
        self.pool.shutdown(wait=True)
        return list(self.acknowledged())

    def _wait_for_units(self) -> None:
        """At most ``units`` units wait: the head's batches are waited for first."""
        if self.max_units is None:
            return
        with self._settled:
            while len(self.units) >= self.max_units and self.error is None and self.units[0].left:
                self._settled.wait(timeout=0.5)

    def _wait_for_room(self) -> bool:
        while not self.room.acquire(timeout=0.5):
            if self.error is not None:
                return False
        if self.error is not None:
            self.room.release()
            return False
        return True

    def _one(self, batch: B) -> None:
        try:
            self.write(batch)
        except BaseException as exc:
            with self._lock:
                self.error = self.error or exc
            raise
        if self.on_batch is not None:
            self.on_batch(batch)

    def _finished(self, pending: _Pending[U], fut: Future[None]) -> None:
        self.room.release()
        if fut.exception() is not None:
            return  # the unit stays unacknowledged, and every unit after it
        with self._lock:
            pending.left -= 1
        self._settle()

    def _settle(self) -> None:
        with self._settled:
            if self.on_unit is not None:
                while self.units and self.units[0].left == 0:
                    self.on_unit(self.units.popleft().unit)
            self._settled.notify_all()


def upserting(
    target: VectorStore,
    retry: RetryPolicy | None,
    on_retry: Callable[[TransientError], None] | None,
    prepare: Callable[[Sequence[Record]], list[Record]] | None = None,
) -> Callable[[Sequence[Record]], None]:
    """A batch writer: ``target.upsert`` under ``retry`` (the run's policy replaces the store's
    own for its calls, one retry layer), each retry reported to ``on_retry``. ``prepare``, in
    the writer thread before the write: e.g. new vectors from the texts (``--reembed``), under
    its own retry policy, its retries reported too."""

    def write(records: Sequence[Record]) -> None:
        if prepare is not None:
            with retry_scope(None, on_retry=on_retry):
                records = prepare(records)
        with retry_scope(retry, on_retry=on_retry):
            target.upsert(list(records))

    return write


def prefetched(pages: Iterable[ScanPage]) -> Iterator[ScanPage]:
    """``pages``, with the next one read by a thread while the caller works on the current one
    (a source's read, often in a driver that releases the GIL, overlaps the transform, checks
    and digests). At most one page waits; closing the iterator stops the reader after the read
    it is in."""
    slot: queue.Queue[tuple[ScanPage | None, BaseException | None]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand_over(item: tuple[ScanPage | None, BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                slot.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for page in pages:
                if not hand_over((page, None)):
                    return
            hand_over((None, None))
        except BaseException as exc:  # handed to the caller, raised there
            hand_over((None, exc))

    reader = threading.Thread(target=read, name="vectorport-prefetch", daemon=True)
    reader.start()
    try:
        while True:
            page, exc = slot.get()
            if exc is not None:
                raise exc
            if page is None:
                return
            yield page
    finally:
        stop.set()
        reader.join()
