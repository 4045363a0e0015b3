"""The sync report: what one ``sync`` pass found and did, JSON-ready, with its exit code.

The same shape and exit codes as :class:`~._report.MigrationReport` (``source``, ``target``,
``status``, ``exit_code``, ``timings``, ``verification``), with a ``sync`` section in place of
``plan`` and ``copy``: 0 synced (and verified equal when asked), 1 verification found data
differences or some source records could not be written, 5 data equal but search quality below
the bar (see :class:`~._verify.VerifyReport`). Operational failures (3) raise instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .._exit import Status
from .._models import JSON
from .._report import Capped, Report
from ..exceptions import Advice, Advised

if TYPE_CHECKING:
    from ..verify._verify import VerifyReport

__all__ = ["SyncReport", "SyncStats"]


@dataclass
class SyncStats:
    """Counts of one sync pass (a resumed pass counts from where it resumed)."""

    mode: str = "incremental"
    """``incremental`` (the state says what the target holds) or ``full`` (the target is read
    and compared record by record: the first sync of a pair, ``full=True``, or the target changed
    outside sync)."""
    reason: str | None = None
    """Why the pass is ``full``."""
    bins: int = 0
    """Key bins of the digests (:func:`vectorport._digest.bin_of`)."""
    bins_read: int = 0
    """Key bins whose records the scan read: every bin, unless the source gives the digest fold
    of each (:attr:`~vectorport._features.Feature.BIN_DIGESTS`); then only those whose fold
    differed from the target's."""
    bins_checked: int = 0
    """Key bins whose source digest differed from the target's after the scan: only their keys
    are looked up for records gone from the source."""
    source_read: int = 0
    """Records read from the source (the scan, plus the key look-ups for gone records)."""
    target_read: int = 0
    """Records read from the target (a full pass only; an incremental pass reads none)."""
    unchanged: int = 0
    new: int = 0
    changed: int = 0
    written: int = 0
    gone: int = 0
    """Records in the target that are not in the source (any more)."""
    deleted: int = 0
    """Of those, deleted from the target (only with ``delete``)."""
    unwritable: Capped[dict[str, JSON]] = field(default_factory=Capped)
    """Source records whose metadata the target cannot hold under the metadata policy: not
    written (with the problems, per key)."""
    retries: int = 0
    resumed: bool = False
    """This pass continued one that was interrupted."""
    restarts: int = 0
    """Times the source scan started again because the source moved under its cursor."""
    seconds: float = 0.0

    _SUMMED: ClassVar[tuple[str, ...]] = (
        "bins",
        "bins_read",
        "bins_checked",
        "source_read",
        "target_read",
        "unchanged",
        "new",
        "changed",
        "written",
        "gone",
        "deleted",
        "retries",
        "restarts",
    )

    @classmethod
    def merged(cls, parts: Sequence[SyncStats], seconds: float) -> SyncStats:
        """The totals of the passes of several shards run side by side (``seconds``: the wall
        time of all of them): counts summed, ``full`` when any shard ran a full pass (with the
        first reason), ``resumed`` when any continued one.

        >>> a, b = SyncStats(new=2, gone=1), SyncStats(mode="full", reason="why", new=3)
        >>> m = SyncStats.merged([a, b], 1.5)
        >>> m.mode, m.reason, m.new, m.gone, m.seconds
        ('full', 'why', 5, 1, 1.5)
        """
        out = cls(seconds=seconds)
        for part in parts:
            for name in cls._SUMMED:
                setattr(out, name, getattr(out, name) + getattr(part, name))
            if part.mode == "full":
                out.mode = "full"
                out.reason = out.reason or part.reason
            out.resumed = out.resumed or part.resumed
            out.unwritable.cap = part.unwritable.cap
            out.unwritable.total += part.unwritable.total
            room = out.unwritable.cap - len(out.unwritable.items)
            out.unwritable.items.extend(part.unwritable.items[: max(room, 0)])
        return out

    def to_dict(self) -> dict[str, JSON]:
        return {
            "mode": self.mode,
            "reason": self.reason,
            "bins": self.bins,
            "bins_read": self.bins_read,
            "bins_checked": self.bins_checked,
            "source_read": self.source_read,
            "target_read": self.target_read,
            "unchanged": self.unchanged,
            "new": self.new,
            "changed": self.changed,
            "written": self.written,
            "gone": self.gone,
            "deleted": self.deleted,
            "unwritable": self.unwritable.to_dict(),
            "retries": self.retries,
            "resumed": self.resumed,
            "restarts": self.restarts,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class SyncReport(Report):
    """The outcome of :func:`vectorport.sync`.

    ``status``: ``synced`` (target brought to the source's state, no verification asked),
    ``verified`` (and verified equal), ``differences`` (verification found data differences),
    ``quality`` (data equal, search quality below the bar) or ``unwritable`` (some source
    records could not be written; the rest was synced).
    """

    SCHEMA: ClassVar[str] = "vectorport.sync/1"

    source: str
    target: str
    status: Status = Status.SYNCED
    state: str | None = None
    """The sync state file."""
    delete: bool = False
    sync: SyncStats = field(default_factory=SyncStats)
    verification: VerifyReport | None = None
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    options: dict[str, JSON] = field(default_factory=dict)
    """The run's options (:meth:`~._options.SyncOptions.to_dict`): the same under every runner."""
    engine: dict[str, Any] = field(default_factory=dict)
    """Where it ran: ``engine`` (``local`` or ``ray``) and, on Ray, ``workers``, the write cap
    each worker got and each task's node, pid, records and rate."""
    shards: list[SyncReport] = field(default_factory=list)
    """Each shard's own report, when the runner ran the pass as several shards (Ray)."""

    def placed(self, engine: dict[str, Any], note: str) -> None:
        self.engine = engine
        self.notes.append(note)

    def conclude(self) -> None:
        """Status and notes from the counts, once the pass is over (before any verification)."""
        stats = self.sync
        if stats.gone and not self.delete:
            self.notes.append(
                Advised.of(
                    "{} records in the target are not in the source; pass {} to delete them",
                    stats.gone,
                    Advice("delete", True),
                )
            )
        if stats.unwritable:
            self.status = Status.UNWRITABLE
            self.notes.append(
                Advised.of(
                    "{} source records have metadata the target cannot hold and were not written; "
                    "pass {} (or stringify, drop)",
                    stats.unwritable.total,
                    Advice("metadata_policy", "flatten"),
                )
            )

    def verified(self, verification: VerifyReport) -> None:
        """Take the verification's outcome. Differences after an incremental pass are changes the
        sync state does not know of (the target was written behind its back): only a full pass,
        which reads the target, finds and repairs them, so the report says so."""
        self.verification = verification
        if self.status == Status.SYNCED:
            self.status = verification.status
        if verification.status == Status.DIFFERENCES and self.sync.mode != "full":
            self.notes.append(
                Advised.of(
                    "verification found differences this incremental sync did not see (the target was "
                    "changed outside the sync, which trusts its state); run sync again with {} to "
                    "compare the whole target and repair them",
                    Advice("full", True),
                )
            )

    def sections(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "state": self.state,
            "delete": self.delete,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "sync": self.sync.to_dict(),
            "verification": self.verification.to_dict() if self.verification else None,
            "notes": list(self.notes),
            "options": dict(self.options),
            "shards": [r.to_dict() for r in self.shards],
            **self.engine,
        }
