"""The migration report: what was planned, copied and verified, JSON-ready, with its exit code.

:attr:`MigrationReport.exit_code` is the exit code of ``vectorport migrate``, from the one table
of :class:`vectorport._exit.ExitCode`: 0 copied and verified (or plan accepted with ``--plan``,
copied with ``--no-verify``); 1 copied, but verification found data differences (see the
report's ``verification``); 4 plan refused, nothing written; 5 data equal, but search quality
on the sampled queries below both the source's and the target's declared recall. Operational
failures (3) raise instead.
The ``EXIT_*`` names are kept as aliases of the table's members.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .._exit import ExitCode, Status
from .._models import JSON
from .._report import DEFAULT_CAP, Capped, Report

if TYPE_CHECKING:
    from ..verify._verify import VerifyReport
    from ._plan import MigrationPlan
    from ._records import CopyStats

__all__ = [
    "DEFAULT_CAP",
    "EXIT_DIFFERENCES",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_REFUSED",
    "Capped",
    "MigrationReport",
]

EXIT_OK = ExitCode.OK
EXIT_DIFFERENCES = ExitCode.PROBLEM
EXIT_FAILURE = ExitCode.FAILURE
EXIT_REFUSED = ExitCode.REFUSED


@dataclass
class MigrationReport(Report):
    """The outcome of :func:`vectorport.migrate`.

    ``status`` is one of ``planned`` (``plan_only``, plan accepted), ``refused`` (plan refused,
    nothing written), ``copied`` (no verification asked), ``verified`` (copied and verified
    equal), ``differences`` (copied, verification found data differences), ``quality`` (data
    equal, search quality failed). ``exit_code`` maps it to
    the CLI's exit code (:class:`~vectorport._exit.ExitCode`). Operational failures raise instead.
    """

    SCHEMA: ClassVar[str] = "vectorport.migrate/1"

    source: str
    target: str
    shard: tuple[int, int]
    status: Status
    plan: MigrationPlan | None = None
    copy: CopyStats | None = None
    verification: VerifyReport | None = None
    checkpoint: str | None = None
    already_complete: bool = False
    """The checkpoint said this migration had finished: nothing was copied, only verified."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in ``plan``, ``copy``, ``index`` (the target's index build after a bulk
    load, when it took any time), ``verify`` and ``total``."""
    notes: list[str] = field(default_factory=list)
    """What the operator should know and do (e.g. the source changed after the migration
    finished: run ``sync``)."""
    options: dict[str, JSON] = field(default_factory=dict)
    """The run's options (:meth:`~._options.MigrateOptions.to_dict`): the same under every runner."""
    engine: dict[str, Any] = field(default_factory=dict)
    """Where it ran: ``engine`` (``local`` or ``ray``) and, on Ray, ``workers``, the write cap
    each worker got and each task's node, pid, records and rate."""

    def placed(self, engine: dict[str, Any], note: str) -> None:
        self.engine = engine
        self.notes.append(note)

    def sections(self) -> dict[str, JSON]:
        return {
            "source": self.source,
            "target": self.target,
            "shard": list(self.shard),
            "already_complete": self.already_complete,
            "checkpoint": self.checkpoint,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "plan": self.plan.to_dict() if self.plan else None,
            "copy": self.copy.to_dict() if self.copy else None,
            "verification": self.verification.to_dict() if self.verification else None,
            "notes": list(self.notes),
            "options": dict(self.options),
            **self.engine,
        }
