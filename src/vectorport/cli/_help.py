"""What every command gets once all are registered: help text that reads cleanly at 80
columns, and ``-v``/``-q`` accepted after the command's name as well as before it."""

from __future__ import annotations

import functools
import inspect
import re
import sys
import typing
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError  # vendored click: no public names
from typer.core import TyperCommand, TyperGroup

from ._common import configure_logging, err_console, logging_options, usage_error
from ._options import OPTIONAL_VALUES, expand_optional_values, record_flags

__all__ = ["finish_commands", "tidy_help"]

_RST_LITERAL = re.compile(r"``(.+?)``")


def tidy_help(text: str | None) -> str | None:
    """A docstring as help: each paragraph on one line (typer keeps the line breaks of every
    paragraph but the first, and of the first in command lists), RST ````code```` as ```code```.

    >>> tidy_help('''Print the DDL and its
    ... function ``match_<table>``.''')
    'Print the DDL and its function `match_<table>`.'
    """
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    joined = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    return _RST_LITERAL.sub(r"`\1`", joined)


def _flags_without_type(params: list[Any]) -> list[Any]:
    """typer ≥ 0.2x prints each option's value type, ``--quiet <bool>`` for a flag that takes
    none (``--help`` too): a flag's or a counter's ``metavar`` is made empty, which typer prints
    instead of the type."""
    for param in params:
        if (getattr(param, "is_flag", False) or getattr(param, "count", False)) and param.metavar is None:
            param.metavar = ""
    return params


class _Command(TyperCommand):
    """The class of every vectorport command (through typer's ``cls=``): flags show no type."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_without_type(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """``--progress`` alone means ``--progress=bar`` (:data:`._options.OPTIONAL_VALUES`)."""
        flags = {
            flag: spec
            for flag, spec in OPTIONAL_VALUES.items()
            if any(flag in p.opts and not getattr(p, "is_flag", False) for p in self.params)
        }
        return super().parse_args(ctx, expand_optional_values(args, flags) if flags else args)


class _Group(TyperGroup):
    """The class of the root command and of the command groups (``bucket``, ``pgvector``)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_without_type(super().get_params(ctx))

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """typer's own, except that a usage error (an unknown flag, a value of the wrong type, a
        missing argument) is one ``error:`` line on stderr like every other error (and a
        ``vectorport.error/1`` document on stdout under ``--json``), not a framed usage panel."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:  # a bare group name: its help, as typer shows it
            exc.show()
            sys.exit(exc.exit_code)
        except ClickException as exc:
            sys.exit(usage_error(exc, as_json="--json" in argv))
        except typer.Abort:
            err_console.print("aborted", highlight=False)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _with_log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` taking ``-v``/``--verbose`` and ``-q``/``--quiet`` too (added to the root's)."""
    signature = inspect.signature(func, eval_str=True)
    if "log_verbose" in signature.parameters:
        return func

    @functools.wraps(func)
    def command(*args: Any, log_verbose: int = 0, log_quiet: bool = False, **kwargs: Any) -> Any:
        if log_verbose or log_quiet:
            verbose, quiet = logging_options()  # the root command's, applied already
            configure_logging(verbose + log_verbose, quiet or log_quiet)
        return func(*args, **kwargs)

    extra = [
        inspect.Parameter(
            "log_verbose",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(
                0, "--verbose", "-v", count=True, show_default=False, help="More logging on stderr."
            ),
            annotation=int,
        ),
        inspect.Parameter(
            "log_quiet",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(False, "--quiet", "-q", help="Only errors on stderr."),
            annotation=bool,
        ),
    ]
    params = list(signature.parameters.values())
    command.__signature__ = signature.replace(parameters=[*params, *extra])  # type: ignore[attr-defined]
    command.__annotations__ = {
        **typing.get_type_hints(func, include_extras=True),
        "log_verbose": int,
        "log_quiet": bool,
    }
    return command


def finish_commands(app: typer.Typer) -> None:
    """Tidy every command's help, give it the logging options and let advice name its flags
    (:func:`._options.record_flags`), sub-apps included."""
    if not isinstance(app.info.cls, type):  # typer's default (TyperGroup), not a class we chose
        app.info.cls = _Group
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):  # typer's default
            info.cls = _Command
        if info.callback is not None:
            info.help = tidy_help(info.help or inspect.getdoc(info.callback))
            record_flags(info.callback)
            info.callback = _with_log_options(info.callback)
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is not None:
            sub.info.help = tidy_help(sub.info.help if isinstance(sub.info.help, str) else None)
            finish_commands(sub)
