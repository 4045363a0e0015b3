"""``vectorport drop URL``: delete a collection (e.g. one made by mistake) after a confirmation.

Exit codes, from :class:`vectorport._exit.ExitCode`:

* 0 ``OK`` — dropped
* 1 ``PROBLEM`` — not confirmed: nothing was dropped
* 2 ``USAGE`` — a bad URL, no such collection, or no terminal to confirm on without ``--yes``
* 3 ``FAILURE`` — the backend failed or could not be reached
"""

from __future__ import annotations

from typing import Annotated

import typer

from .._exit import ExitCode
from .._registry import connect
from ..exceptions import ConfigurationError
from ._common import JsonOption, emit_json, err_console, reported_errors

SCHEMA = "vectorport.drop/1"


def _confirmed(what: str) -> bool:
    """Ask on the terminal (or read the answer from stdin); no answer at all is a usage error."""
    try:
        return bool(typer.confirm(f"drop {what}?", default=False, err=True))
    except typer.Abort:  # stdin closed: nobody to ask
        raise ConfigurationError(f"drop {what} needs confirmation: pass --yes") from None


def drop(
    url: Annotated[str, typer.Argument(help="The collection's URL, e.g. pgvector://./pgdata?table=docs.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: bool = JsonOption,
) -> None:
    """Delete a collection and every record in it (asks first; --yes does not). Exit 0/1/2/3."""
    with reported_errors(), connect(url) as store:
        count = store.count()
        spec = store.spec
        what = f"{store.url.masked} ({store.name}, {count:,} records, {spec.dimension}-d {spec.metric.value})"
        if not yes and not _confirmed(what):
            err_console.print("not dropped", highlight=False, markup=False)
            raise typer.Exit(ExitCode.PROBLEM)
        store.drop()
    if as_json:
        doc = {"url": store.url.masked, "backend": store.name, "records": count, "dropped": True}
        emit_json(doc, SCHEMA)
    else:
        err_console.print(f"dropped {what}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("drop")(drop)
