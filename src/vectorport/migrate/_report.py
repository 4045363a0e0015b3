"""The migration report: what was planned, copied and verified, JSON-ready, with exit codes.

Exit codes of ``vectorport migrate`` (and :attr:`MigrationReport.exit_code`):

====  =====================================================================================
code  meaning
====  =====================================================================================
0     copied and verified (or: plan accepted with ``--plan``; copied with ``--no-verify``)
2     copied, but verification found differences (see the report's ``verification``)
3     operational failure: a backend failed or could not be reached, bad URL or option; the
      checkpoint holds the progress, run again with ``--resume``
4     plan refused: nothing was written; the report says why and which flag to pass
====  =====================================================================================
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from .._models import JSON

if TYPE_CHECKING:
    from ._plan import MigrationPlan
    from ._run import CopyStats
    from ._verify import VerifyReport

__all__ = [
    "EXIT_DIFFERENCES",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_REFUSED",
    "Capped",
    "MigrationReport",
]

EXIT_OK = 0
EXIT_DIFFERENCES = 2
EXIT_FAILURE = 3
EXIT_REFUSED = 4

T = TypeVar("T")

DEFAULT_CAP = 100
"""Examples kept per group of problems or differences; totals are always exact."""


@dataclass
class Capped(Generic[T]):
    """A list that keeps its first ``cap`` items but counts them all."""

    cap: int = DEFAULT_CAP
    total: int = 0
    items: list[T] = field(default_factory=list)

    def add(self, item: T) -> None:
        self.total += 1
        if len(self.items) < self.cap:
            self.items.append(item)

    def __bool__(self) -> bool:
        return self.total > 0

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def to_dict(self) -> dict[str, JSON]:
        return {"total": self.total, "shown": len(self.items), "items": list(self.items)}


@dataclass
class MigrationReport:
    """The outcome of :func:`vectorport.migrate`.

    ``status`` is one of ``planned`` (``plan_only``, plan accepted), ``refused`` (plan refused,
    nothing written), ``copied`` (no verification asked), ``verified`` (copied and verified
    equal), ``differences`` (copied, verification found differences). ``exit_code`` maps it to
    the CLI's exit code (see the module docstring). Operational failures raise instead.
    """

    source: str
    target: str
    shard: tuple[int, int]
    status: str
    plan: MigrationPlan | None = None
    copy: CopyStats | None = None
    verification: VerifyReport | None = None
    checkpoint: str | None = None
    already_complete: bool = False
    """The checkpoint said this migration had finished: nothing was copied, only verified."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in ``plan``, ``copy``, ``verify`` and ``total``."""

    @property
    def exit_code(self) -> int:
        """0, 2 or 4 (3 is raised, not returned)."""
        return {"refused": EXIT_REFUSED, "differences": EXIT_DIFFERENCES}.get(self.status, EXIT_OK)

    @property
    def ok(self) -> bool:
        """True when the exit code is 0."""
        return self.exit_code == EXIT_OK

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict."""
        return {
            "source": self.source,
            "target": self.target,
            "shard": list(self.shard),
            "status": self.status,
            "exit_code": self.exit_code,
            "already_complete": self.already_complete,
            "checkpoint": self.checkpoint,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "plan": self.plan.to_dict() if self.plan else None,
            "copy": self.copy.to_dict() if self.copy else None,
            "verification": self.verification.to_dict() if self.verification else None,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, default=str)
