"""Sync from a change feed: apply what the source captured instead of scanning it.

A captured source (:class:`~vectorport._features.SupportsChangeFeed`, pgvector) hands out the
keys of committed changes past a position (:mod:`vectorport._changes`). Each batch is applied
in three steps that keep the sync state (:mod:`._syncstate`) on the safe side of the target at
every instant, as a scan pass does:

1. the keys are read back from the source (``get``: the source's current record, in its
   layout and scope) and the state marks the keys about to change "content unknown";
2. the target is written (upserts batched to its write limit, deletes of keys the source no
   longer holds and the state says the target does);
3. the state records the new digests and the feed's position in one commit, and only then is
   the feed confirmed (the slot advanced, the outbox rows deleted).

A kill between 2 and 3 reads the same keys again next time (the write is idempotent: the same
current record); between 3 and the confirmation, the feed is read past the recorded position
(nothing is applied twice). A change that cannot be applied raises before step 2 and leaves
both positions where they were.

Capture starts behind a scan: the pass that first records what the target holds (or any scan
pass) notes the feed's confirmed position before it reads the source (:func:`mark`), and the
changes past it are applied after; re-applying a change the scan already saw is harmless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .._changes import ChangeBatch, ChangeFeed
from .._digest import bin_of, record_digest
from .._features import Feature, change_capture_of, split_replace_of, supports
from .._models import JSON, Record
from .._protocol import VectorStore
from .._retry import Backoff, RetryPolicy, retry_scope
from ..engine._pipeline import Acknowledged, upserting
from ..engine._transform import Transformer
from ..exceptions import (
    Action,
    Advice,
    Advised,
    BackendUnavailableError,
    ConfigurationError,
    NotFoundError,
    Step,
    TransientError,
)
from ._report import SyncStats
from ._state import SyncState

__all__ = ["CaptureRun", "Lag", "Reshaped", "feed_of", "mark", "ready", "reshaped", "trim_scanned"]

READ_LIMIT = 5_000
"""Row changes read from the feed at a time (whole transactions: a batch may hold more)."""
READ_BACK = 1_000
"""Keys read back from the source per ``get``."""
OUTAGE = RetryPolicy(base=1.0, cap=30.0)
"""Backoff of ``follow`` while the source (or the target) fails with a transient error: waits
up to 1, 2, 4 … 30 seconds, for up to ``max_outage`` seconds in all (a follower outlives an
outage of that length)."""

log = logging.getLogger("vectorport.migrate")


def feed_of(store: VectorStore, shard: tuple[int, int] = (0, 1)) -> ChangeFeed | None:
    """The source's installed change feed; ``None`` when it has none (or for one shard of a
    sharded sync: a feed covers the whole collection)."""
    captured = change_capture_of(store)
    if shard[1] > 1 or captured is None:
        return None
    return captured.change_feed()


def mark(feed: ChangeFeed) -> dict[str, JSON]:
    """What a scan pass records before it reads the source: the feed's confirmed position and
    the shape of the records it reads."""
    return {"kind": feed.kind, "name": feed.name, "position": feed.position(), "shape": feed.shape()}


def reshaped(state: SyncState, feed: ChangeFeed) -> bool:
    """Whether the source's records changed shape (a column added, a type changed) since the
    state's mark: records changed with no captured change, so a scan is needed."""
    got = state.get("capture")
    return isinstance(got, dict) and got.get("shape") != feed.shape()


def ready(state: SyncState, feed: ChangeFeed) -> bool:
    """Whether the state can go on from the feed: a pass recorded the target behind a mark of
    this feed, of records of the same shape, and the feed still holds every change since (a
    slot created again, or an outbox, after the mark starts later: a scan is needed)."""
    got = state.get("capture")
    if not isinstance(got, dict) or state.parts is None or state.get("pass") is not None:
        return False
    if (got.get("kind"), got.get("name")) != (feed.kind, feed.name) or reshaped(state, feed):
        return False
    return feed.covers(str(got.get("position")))


def trim_scanned(state: SyncState, feed: ChangeFeed) -> None:
    """After a scan pass: confirm the changes its scan read already (those committed before the
    mark it recorded, :meth:`~vectorport._changes.ChangeFeed.covered`), as a capture pass
    confirms a batch once the target holds it, so the next pass does not read them again."""
    got = state.get("capture")
    if not isinstance(got, dict) or (got.get("kind"), got.get("name")) != (feed.kind, feed.name):
        return
    feed.confirm(feed.covered(str(got.get("position"))))


class Reshaped(ConfigurationError):
    """The source's records changed shape while changes were applied (a column added): the
    changed keys no longer tell every changed record, so the run scans before it goes on."""


@dataclass
class Lag:
    """How far the target is behind the source, measured when a batch is read."""

    seconds: float
    """Age of the oldest change not applied yet (0 when caught up)."""
    behind: int
    """Changes read and not applied yet (at most about :data:`READ_LIMIT`; 0 when caught up)."""
    applied: int
    """Changes applied since the run started."""
    position: str | None
    read_at: float = 0.0
    """When the batch was read (``time.time()``)."""
    complete: bool = True
    """The batch held every change the feed had when read (fewer than :data:`READ_LIMIT`): once
    it is applied, so is every change committed before :attr:`read_at`."""

    def to_dict(self) -> dict[str, JSON]:
        return {
            "lag_seconds": round(self.seconds, 3),
            "behind": self.behind,
            "applied": self.applied,
            "position": self.position,
        }


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class CaptureRun:
    """Applies a feed's batches to a target (see the module docstring)."""

    def __init__(
        self,
        source: VectorStore,
        target: VectorStore,
        state: SyncState,
        transformer: Transformer,
        stats: SyncStats,
        feed: ChangeFeed,
        *,
        delete: bool,
        batch_size: int,
        retry: RetryPolicy | None,
        concurrency: int = 1,
        prepare: Callable[[Sequence[Record]], list[Record]] | None = None,
    ) -> None:
        self.prepare = prepare
        self.source, self.target, self.state = source, target, state
        self.transformer, self.stats, self.feed = transformer, stats, feed
        self.delete = delete
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.retry = retry
        self.applied = 0
        self.lag = Lag(0.0, 0, 0, None)
        self._held: list[tuple[str, list[str]]] = []
        """The records of the batch being applied that the target cannot hold."""

    @property
    def position(self) -> str | None:
        got = self.state.get("capture")
        return str(got.get("position")) if isinstance(got, dict) else None

    def step(self) -> bool:
        """Read and apply one batch; whether there was anything to apply."""
        if reshaped(self.state, self.feed):
            raise Reshaped(
                f"the source table's columns changed while its changes were applied ({self.feed.kind} "
                f"{self.feed.name}): records changed with no captured change; a scan pass is needed"
            )
        read_at = time.time()
        batch = self.feed.read(READ_LIMIT, after=self.position)
        now = datetime.now(UTC)
        age = (now - batch.oldest).total_seconds() if batch.oldest is not None else 0.0
        where = batch.position or self.position
        complete = batch.changes < READ_LIMIT
        self.lag = Lag(max(age, 0.0), batch.changes, self.applied, where, read_at, complete)
        if batch.position is None:
            return False
        self.apply(batch)
        self.applied += batch.changes
        return True

    def drain(
        self, on_lag: Callable[[Lag], None] | None = None, stop: Callable[[], bool] | None = None
    ) -> None:
        """Apply batches until the feed has nothing more (or ``stop()``)."""
        while True:
            more = self.step()
            if on_lag is not None:
                on_lag(self.lag)
            if not more or (stop is not None and stop()):
                return

    def apply(self, batch: ChangeBatch) -> None:
        """Apply one batch: read back, mark, write, record, confirm."""
        keys = list(dict.fromkeys(batch.keys))
        if batch.truncated:
            keys = list(dict.fromkeys([*keys, *self.state.all_keys()]))
        parts = self.state.parts or 1
        known = self.state.lookup(keys)
        self._held = []
        writes: list[tuple[Record, int, bytes]] = []
        gone: list[tuple[str, int]] = []
        for chunk in _chunks(keys, READ_BACK):
            found = {r.key: r for r in self._read_back(chunk)}
            self.stats.source_read += len(found)
            for key in chunk:
                rec = found.get(key)
                if rec is None:
                    if key in known:
                        gone.append((key, bin_of(key, parts)))
                    continue
                item = self._prepared(rec, known.get(key), parts)
                if item is not None:
                    writes.append(item)
        self.stats.gone += len(gone)
        deletes = gone if self.delete else []
        self.state.mark_unknown([(r.key, s) for r, s, _ in writes] + deletes)
        self.state.commit()  # the target changes only after the state says so
        self._write([r for r, _, _ in writes])
        if deletes:
            for chunk in _chunks([k for k, _ in deletes], self.target.capabilities.max_delete_batch or 500):
                with retry_scope(self.retry):
                    self.target.delete(list(chunk))
        self.state.record([(r.key, s, d) for r, s, d in writes])
        self.state.forget(deletes)
        self.state.release(keys)
        self.state.hold(self._held)
        if self._held:
            log.warning(
                "capture: %d changed records held back, the target cannot hold them (%s: %s); every "
                "pass reports them until the source changes them",
                len(self._held),
                self._held[0][0],
                "; ".join(self._held[0][1]),
            )
        self.stats.written += len(writes)
        self.stats.deleted += len(deletes)
        got = self.state.get("capture")
        self.state.put("capture", {**(got if isinstance(got, dict) else {}), "position": batch.position})
        self.state.commit()
        self.feed.confirm(batch)

    def _prepared(self, rec: Record, known: bytes | None, parts: int) -> tuple[Record, int, bytes] | None:
        """The record to write (transformed, with its key bin and digest), ``None`` when it
        cannot be written or the target already holds it."""
        out = self.transformer.apply(rec.metadata, rec.text)
        if out.unresolved:
            self._held.append((rec.key, [f"{p}: {m}" for p, m in out.unresolved]))
            return None
        digest = record_digest(rec.key, rec.vector, out.metadata, out.text)
        if known == digest:
            self.stats.unchanged += 1
            return None
        if known is None:
            self.stats.new += 1
        else:
            self.stats.changed += 1
        return Record(rec.key, rec.vector, out.metadata, out.text), bin_of(rec.key, parts), digest

    def _read_back(self, keys: Sequence[str]) -> list[Record]:
        """The source's records of ``keys``. A table dropped since the feed's read (which checks
        it) is said as the feed says it, the position kept, not as a collection to create."""
        try:
            return self.source.get(keys, include=["vector", "metadata", "text"])
        except NotFoundError:
            self.feed.read(1, after=self.position)  # raises when the table is gone
            raise

    def _write(self, records: list[Record]) -> None:
        """Upsert ``records`` in batches of the target's size, ``concurrency`` at a time (the
        state marks them all unknown first, so their order does not matter)."""
        writes: Acknowledged[None, list[Record]] = Acknowledged(
            upserting(self.target, self.retry, self._retried, self.prepare),
            concurrency=self.concurrency,
            name="vectorport-capture",
        )
        # the keys are marked in the state before the write, so a target may replace in two steps
        with split_replace_of(self.target):
            n = self.batch_size
            writes.submit(None, [records[i : i + n] for i in range(0, len(records), n)])
            writes.close()
        if writes.error is not None:
            raise writes.error

    def _retried(self, exc: TransientError) -> None:
        self.stats.retries += 1


def follow_until(
    run: CaptureRun,
    *,
    poll: float,
    on_lag: Callable[[Lag], None] | None,
    caught_up: Callable[[], bool] | None,
    max_outage: float = 0.0,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Apply changes continuously; each time the feed is drained, ``caught_up()`` may end the
    run (``until_equal``: the target verifies equal). Runs until then or until interrupted.

    A transient error (the source restarted, a connection dropped, throttling that outlasted
    the store's own retries) does not end the run: it is logged on stderr and the run goes on
    from the stored position after a backoff (:data:`OUTAGE`), for up to ``max_outage``
    seconds (0: for as long as it lasts); then :class:`~vectorport.exceptions.BackendUnavailableError`
    ends the run, the position kept. Any other error (a dropped table, a dimension change)
    ends it at once, the position kept. ``stop()`` true after a batch ends the run too (another
    writer took the target over: :mod:`._lease`)."""
    outage = Backoff(OUTAGE, max_outage)
    while True:
        try:
            run.drain(on_lag, stop)
            done = (stop is not None and stop()) or (caught_up is not None and caught_up())
        except (TransientError, BackendUnavailableError) as exc:
            where, lasted = run.position, outage.lasted
            wait = outage.next_wait()
            if wait is None:
                raise BackendUnavailableError(
                    Advised.of(
                        "follow: gave up after an outage of {:.0f}s ({} retries, {}): {}; the sync "
                        "position {} is kept: run the same command again once the store answers",
                        lasted,
                        outage.failures,
                        Advice("max_outage", max_outage),
                        exc,
                        where or "(none yet)",
                    )
                ) from exc
            tries = outage.failures
            log.warning("follow: %s; retry %d in %.1fs from position %s", exc, tries, wait, where or "start")
            time.sleep(wait)
            continue
        if outage.failures:
            log.warning("follow: the source answers again after %d retries; following", outage.failures)
            outage = Backoff(OUTAGE, max_outage)
        if done:
            return
        time.sleep(poll)


def check_follow(source: VectorStore, label: str) -> None:
    """Refuse ``follow`` on a source that cannot capture (before any I/O)."""
    if not supports(source, Feature.CHANGE_FEED):
        raise ConfigurationError(
            Advised.of(
                "{} cannot capture its changes (only PostgreSQL sources can), so {} has nothing to "
                "follow: {} instead, which scans",
                label,
                Advice("follow", True),
                Step(Action.SCHEDULE_SYNC),
            )
        )
