"""Shared CLI plumbing: logging to stderr, JSON/rich output, error → exit-code mapping.

Every command exits with a code of the one table, :class:`vectorport._exit.ExitCode`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from .. import _activity
from .._exit import ExitCode
from ..exceptions import (
    ConfigurationError,
    FilterError,
    NotFoundError,
    UnsupportedError,
    VectorportError,
    worded,
)
from ._options import FLAGS

__all__ = [
    "JsonOption",
    "cli_text",
    "configure_logging",
    "emit_json",
    "err_console",
    "exit_code_of",
    "fail",
    "logging_options",
    "make_console",
    "note_json",
    "out_console",
    "parse_json_arg",
    "print_error",
    "reported_errors",
    "usage_error",
    "writable_path",
]

LOG_WIDTH = 200
"""Console width when the stream is not a terminal (CI logs, files): rich's default of 80
columns would truncate the comparison tables to ``1.…``. ``COLUMNS`` overrides it."""


def make_console(stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr), wide when writing to a log rather than a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=LOG_WIDTH if wide else None)


out_console = make_console()
err_console = make_console(stderr=True)

_json_mode: list[bool] = [False]


def note_json(value: bool) -> bool:
    """The ``--json`` option's callback: remember it, so an error becomes a JSON document too."""
    _json_mode[0] = bool(value)
    return value


JsonOption = typer.Option(
    False, "--json", help="Print one JSON document on stdout (docs/json.md).", callback=note_json
)


_logging: list[int] = [0, 0]


def logging_options() -> tuple[int, bool]:
    """The ``-v`` count and ``-q`` of the last :func:`configure_logging` (the root command's)."""
    return _logging[0], bool(_logging[1])


def configure_logging(verbose: int = 0, quiet: bool = False) -> None:
    _logging[:] = [verbose, int(quiet)]
    level = logging.ERROR if quiet else logging.WARNING - 10 * min(verbose, 2)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("vectorport")
    root.handlers[:] = [handler]
    root.setLevel(level)
    if not _activity_shown:
        _activity_shown.append(True)
        _activity.subscribe(_show_activity)


_activity_shown: list[bool] = []


def _show_activity(event: _activity.Activity) -> None:
    """One line on stderr when a backend starts or finishes long work (an embedded server's
    start, an index build); its progress goes to the progress bars, not here."""
    if event.done is None and not _logging[1]:
        err_console.print(event.message, highlight=False, markup=False)


def writable_path(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """A ``typer`` callback for an output file option (``--report``, ``--output``): refuses,
    before any work, a path that cannot be written (exit 2, one line), instead of a traceback
    once the work is done."""
    if value is None:
        return None
    from .._paths import writable_file

    what = param.opts[0].lstrip("-") if param.opts else "output"
    try:
        return writable_file(value, what)
    except ConfigurationError as exc:
        print_error(exc)
        raise typer.Exit(ExitCode.USAGE) from None


ReportOption = Annotated[
    Path | None,
    typer.Option("--report", help="Also write the JSON report to this file.", callback=writable_path),
]
"""``--report PATH`` of the commands that run work (``migrate``, ``verify``, ``sync``, ``export``):
the ``--json`` document, also written to a file (see :func:`write_report`)."""


def write_report(path: Path | None, data: Any) -> None:
    """Write ``data`` as the JSON report to ``path`` (``--report``; nothing when ``None``)."""
    if path is not None:
        from .._paths import unwritable

        try:
            path.write_text(
                json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
            )
        except OSError as exc:  # checked before the work (writable_path); a disk full since
            print_error(unwritable("report", path, exc))
            raise typer.Exit(ExitCode.FAILURE) from None


def emit_json(data: Mapping[str, Any], schema: str | None = None, *, line: bool = False) -> None:
    """Write one JSON document to stdout (``line``: on one line, for JSON Lines).

    Every document names its schema (``"schema": "vectorport.<command>/<n>"``, published in
    ``docs/json.md``): a report carries its own, a plain dict gets ``schema`` put first.
    """
    doc = dict(data)
    if schema is not None:
        doc = {"schema": schema} | {k: v for k, v in doc.items() if k != "schema"}
    if not str(doc.get("schema", "")).startswith("vectorport."):
        raise TypeError(f"a --json document must name its vectorport schema, got {doc.get('schema')!r}")
    indent = None if line else 2
    sys.stdout.write(json.dumps(doc, indent=indent, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def parse_json_arg(value: str | None, what: str) -> Any:
    """Parse a JSON command-line argument, or exit 2 saying what was wrong."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        err_console.print(f"[red]error:[/red] {what} is not valid JSON: {exc}")
        raise typer.Exit(ExitCode.USAGE) from None
    except RecursionError:
        err_console.print(f"[red]error:[/red] {what} is nested too deeply to read; flatten it")
        raise typer.Exit(ExitCode.USAGE) from None


def cli_text(message: str | BaseException) -> str:
    """A library message (or error) as the command line says it: its structured advice
    (:class:`~vectorport.exceptions.Advised`) in flags and commands; a plain sentence as it is.

    >>> from vectorport.exceptions import Action, Advised, Step
    >>> cli_text(Advised.of("x is missing; {}", Step(Action.CREATE)))[:47]
    'x is missing; create it with `vectorport ingest'
    """
    if isinstance(message, VectorportError):
        return message.worded(FLAGS)
    if isinstance(message, BaseException):
        return str(message)
    return worded(message, FLAGS)


_ADVICE_KEYS = frozenset({"suggestion", "reasons", "notes"})


def cli_words(doc: Any) -> Any:
    """A report's JSON as the command line says it: its advice (``suggestion``, ``reasons``,
    ``notes``, at any depth) through :func:`cli_text`; the data as it is."""
    if isinstance(doc, dict):
        return {k: (_advice(v) if k in _ADVICE_KEYS else cli_words(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [cli_words(v) for v in doc]
    return doc


def _advice(value: Any) -> Any:
    if isinstance(value, str):
        return cli_text(value)
    if isinstance(value, list):
        return [cli_text(v) if isinstance(v, str) else v for v in value]
    return value


def print_error(exc: BaseException) -> None:
    """``error: Kind: message`` on stderr, unwrapped (a log line stays one line)."""
    err_console.print(
        f"[red]error:[/red] {type(exc).__name__}: {escape(cli_text(exc))}",
        highlight=False,
        soft_wrap=True,
    )


def usage_error(exc: Any, *, as_json: bool) -> int:
    """Print a command-line usage error (a click ``ClickException``: an unknown flag, a bad
    value, a missing argument) as one ``error:`` line naming the command and where its help is;
    under ``--json`` also its ``vectorport.error/1`` document. Its exit code (2 for usage)."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "vectorport"
    message = " ".join(str(exc.format_message()).split())
    kind = "UsageError" if int(exc.exit_code) == ExitCode.USAGE else type(exc).__name__
    err_console.print(
        f"[red]error:[/red] {kind}: {escape(command)}: {escape(message)} (see `{escape(command)} --help`)",
        highlight=False,
        soft_wrap=True,
    )
    if as_json:
        doc = {"error": f"{command}: {message}", "kind": kind, "exit_code": int(exc.exit_code)}
        emit_json(doc, "vectorport.error/1")
    return int(exc.exit_code)


ERROR_CODES: dict[type[BaseException], ExitCode] = {
    ConfigurationError: ExitCode.USAGE,
    FilterError: ExitCode.USAGE,
    UnsupportedError: ExitCode.USAGE,
    NotFoundError: ExitCode.USAGE,
    VectorportError: ExitCode.FAILURE,
}
"""The one mapping of an error to its exit code, for every command (``docs/exit-codes.md``): a
bad URL, option, filter or input is 2 wherever it is found, a backend that failed 3."""


def exit_code_of(
    exc: BaseException, overrides: Mapping[type[BaseException], ExitCode] | None = None
) -> ExitCode:
    """The exit code of ``exc``: the first of ``overrides`` then :data:`ERROR_CODES` it is an instance of."""
    codes = {**(overrides or {}), **{t: c for t, c in ERROR_CODES.items() if t not in (overrides or {})}}
    return next((c for t, c in codes.items() if isinstance(exc, t)), ExitCode.FAILURE)


def fail(exc: BaseException, overrides: Mapping[type[BaseException], ExitCode] | None = None) -> typer.Exit:
    """Print ``exc`` as one line and return the :class:`typer.Exit` of its code (``raise fail(exc)``).

    Under ``--json`` stdout gets the error's document too (``vectorport.error/1``), so a caller
    reading stdout always reads one JSON document.
    """
    print_error(exc)
    code = exit_code_of(exc, overrides)
    if _json_mode[0]:
        doc = {"error": cli_text(exc), "kind": type(exc).__name__, "exit_code": int(code)}
        emit_json(doc, "vectorport.error/1")
    return typer.Exit(code)


@contextmanager
def reported_errors(exit_codes: Mapping[type[BaseException], ExitCode] | None = None) -> Iterator[None]:
    """Turn vectorport errors into one readable line on stderr and an exit code."""
    try:
        yield
    except VectorportError as exc:
        raise fail(exc, exit_codes) from None
