"""Change capture, as the sync engine sees it: a feed of changed chunk keys with a position.

A store that can capture its changes implements :class:`~vectorport._features.SupportsChangeFeed`
(pgvector: a logical replication slot or an outbox trigger, :mod:`vectorport.backends.pgvector._capture`).
A feed hands out :class:`ChangeBatch` es of keys past its confirmed position without consuming
them; the consumer (``vectorport.sync``, :mod:`vectorport.sync._capture`) reads each key's
current record back from the source, writes (or deletes) it in the target, records that in
its state, and only then calls ``confirm``. A kill anywhere in between re-reads the same keys:
writes are idempotent upserts of the source's current record, so nothing is lost or doubled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ._models import JSON

__all__ = ["CaptureSetup", "ChangeBatch", "ChangeFeed"]


@dataclass
class ChangeBatch:
    """Changes read from a feed, in commit order (not consumed until confirmed)."""

    position: str | None
    """Where the feed stands once this batch is applied (``None``: the batch is empty)."""
    keys: list[str] = field(default_factory=list)
    """Chunk keys inserted, updated or deleted (each once; read back to know which)."""
    truncated: bool = False
    """The table was truncated: every key the target holds is a candidate."""
    changes: int = 0
    """Row changes the batch holds (before keys were deduplicated)."""
    oldest: datetime | None = None
    """Commit time of the batch's first change (its age is the lag)."""
    newest: datetime | None = None
    ids: list[int] = field(default_factory=list)
    """Feed-specific row ids to confirm (the outbox's)."""


@dataclass(frozen=True)
class CaptureSetup:
    """What ``setup_capture`` installed: the method (``slot`` or ``outbox``), the name of its
    objects, why this method, and the objects it created (empty when already installed)."""

    method: str
    name: str
    reason: str
    created: list[str]


class ChangeFeed(Protocol):
    """The change feed of one captured collection."""

    kind: str
    """``slot`` or ``outbox``."""
    name: str

    def position(self) -> str:
        """Where the feed is confirmed up to."""
        ...

    def claim(self, consumer: str) -> str | None:
        """Make ``consumer`` (a target) the feed's one consumer, recorded with the capture, and
        hold it for this process until :meth:`close` (raise
        :class:`~vectorport.exceptions.ConfigurationError` while another process holds it).
        Return the other consumer the feed already feeds instead (then nothing is held): each
        consumer confirms what it applied, so a second one would lose what the first confirms."""
        ...

    def owner(self) -> str | None:
        """The consumer the feed feeds (``None`` before any claimed it)."""
        ...

    def health(self) -> dict[str, JSON]:
        """What the capture holds back on the source's server and for whom: ``method``,
        ``name``, ``consumer``, ``confirmed_at`` (the last confirmation noted, ISO time), and
        the method's own measures (a slot's ``retained_wal_bytes`` and ``wal_status``, the
        outbox's ``outbox_rows``)."""
        ...

    def shape(self) -> str:
        """A digest of the shape of the captured records (the table's columns and types): a
        change of shape (a column added) changes records without a captured change."""
        ...

    def covers(self, position: str) -> bool:
        """Whether the feed holds every change after ``position`` (a position read from it
        earlier): false when it was made again since, so changes in between are not in it."""
        ...

    def read(self, limit: int, after: str | None = None) -> ChangeBatch:
        """About ``limit`` changes past the confirmed position (and past ``after``, a position
        the consumer applied and did not confirm yet)."""
        ...

    def confirm(self, batch: ChangeBatch) -> None:
        """The target holds ``batch``: the feed may forget it."""
        ...

    def covered(self, position: str) -> ChangeBatch:
        """The changes a scan of the source that began after ``position`` (read from
        :meth:`position` before it) has read already: a scan pass confirms them, so they are
        not read again (empty when the feed cannot tell which)."""
        ...

    def behind(self) -> int:
        """How far the feed is behind the source (WAL bytes for a slot, rows for an outbox)."""
        ...

    def close(self) -> None: ...
