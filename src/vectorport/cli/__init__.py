"""The ``vectorport`` command line: thin commands over the library.

Each command lives in a ``_cmd_<name>.py`` module defining ``register(app)``; every such module is
imported here, so adding a command never edits a shared file. Results go to stdout (JSON with
``--json``), logs and progress to stderr. Every command exits with a code of one table,
:class:`vectorport._exit.ExitCode` (0 ok, 1 a check found a problem, 2 usage, 3 a backend
failed, 4 a migration plan refused); each command's module says what its codes mean for it.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

from ._common import configure_logging
from ._help import finish_commands

__all__ = ["app", "main"]

app = typer.Typer(
    name="vectorport",
    help="Move RAG chunk stores between Chroma, pgvector and vector buckets, and prove it worked.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    verbose: int = typer.Option(
        0, "--verbose", "-v", count=True, show_default=False, help="More logging on stderr (-vv: more)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors on stderr."),
) -> None:
    configure_logging(verbose, quiet)


for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("_cmd_")):
    importlib.import_module(f"{__name__}.{_mod}").register(app)
finish_commands(app)


def main() -> None:
    """Console-script entry point."""
    app()
