"""The base of every command's report: a :class:`~vectorport._exit.Status`, the exit code the
one table gives it, and a JSON document that names its schema (``vectorport.<command>/<n>``).

A report class sets :attr:`Report.SCHEMA`, has a ``status`` (a field or a property) and
implements :meth:`Report.sections` (its own sections); :meth:`Report.to_dict` puts ``schema``,
``status`` and ``exit_code`` first. The schema's number grows when a field changes meaning or
goes away (adding a field keeps it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ._exit import ExitCode, Status

if TYPE_CHECKING:
    from ._models import JSON

__all__ = ["DEFAULT_CAP", "Capped", "Report"]


class Report:
    """What every report shares: ``status`` → ``exit_code`` → ``ok``, and ``to_dict``/``to_json``."""

    SCHEMA: ClassVar[str]
    """``vectorport.<command>/<version>``, the ``schema`` field of :meth:`to_dict`."""

    if TYPE_CHECKING:

        @property
        def status(self) -> Status: ...

    @property
    def exit_code(self) -> ExitCode:
        """The exit code of :attr:`status`, from :data:`vectorport._exit.EXIT_CODES`."""
        return Status(self.status).exit_code

    @property
    def ok(self) -> bool:
        """True when the exit code is 0."""
        return self.exit_code == ExitCode.OK

    def sections(self) -> dict[str, Any]:
        """The report's own sections (everything but ``schema``, ``status`` and ``exit_code``)."""
        raise NotImplementedError

    def placed(self, engine: dict[str, Any], note: str) -> None:
        """Say where the command ran: the ``engine`` section (runner, workers, per-task rates)
        and a note, for a command a runner ran whole as one task."""
        raise NotImplementedError(f"{type(self).__name__} is not run whole by a runner")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``schema``, ``status``, ``exit_code``, then :meth:`sections`."""
        status = Status(self.status)
        head: dict[str, Any] = {
            "schema": self.SCHEMA,
            "status": status.value,
            "exit_code": int(status.exit_code),
        }
        return head | self.sections()

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, default=str)


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
