"""The base of every command's report: a :class:`~vectorport._exit.Status`, the exit code the
one table gives it, and a JSON document that names its schema (``vectorport.<command>/<n>``).

A report class sets :attr:`Report.SCHEMA`, has a ``status`` (a field or a property) and
implements :meth:`Report.sections` (its own sections); :meth:`Report.to_dict` puts ``schema``,
``status`` and ``exit_code`` first. The schema's number grows when a field changes meaning or
goes away (adding a field keeps it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from ._exit import ExitCode, Status

__all__ = ["Report"]


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
