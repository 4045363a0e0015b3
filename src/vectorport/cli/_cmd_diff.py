"""``vectorport diff SRC DST``: the keys that differ between two stores (missing, extra, changed).

Exit codes, from :class:`vectorport._exit.ExitCode`:

* 0 ``OK`` — no key differs
* 1 ``PROBLEM`` — keys differ (listed on stdout, or in the JSON document)
* 2 ``USAGE`` — a bad URL or option
* 3 ``FAILURE`` — a backend failed or could not be reached
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..diff import DiffOptions, DiffReport
from ..diff import diff as run_diff
from ..exceptions import VectorportError
from ._common import JsonOption, emit_json, fail, out_console
from ._engine import AddressOption, Engine, EngineOption, WorkersOption, print_workers, runner
from ._options import with_options


@with_options(DiffOptions, {}, {"progress": None})
def diff(
    source: Annotated[str, typer.Argument(help="Source store URL.")],
    target: Annotated[str, typer.Argument(help="Target store URL.")],
    as_json: bool = JsonOption,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    *,
    options: dict[str, Any],
) -> None:
    """List the keys missing from the target, extra in it, and changed. Exit 0/1/2/3."""
    if options["progress"] is None:
        options["progress"] = sys.stderr.isatty()
    try:
        report = run_diff(source, target, runner=runner(engine, workers, address), **options)
    except VectorportError as exc:
        raise fail(exc) from None
    if as_json:
        emit_json(report.to_dict())
    else:
        _print(report)
        print_workers(report.to_dict())
    if not report.ok:
        raise typer.Exit(report.exit_code)


def _print(report: DiffReport) -> None:
    """One line per differing key (``-`` missing, ``+`` extra, ``~`` changed), then the totals."""
    for sign, keys in (("-", report.missing), ("+", report.extra), ("~", report.changed)):
        for key in keys:
            out_console.print(f"{sign} {key}", highlight=False, markup=False, soft_wrap=True)
    for what in report.collection:
        out_console.print(f"! {what}", highlight=False, markup=False)
    totals = (
        f"{report.missing.total:,} missing, {report.extra.total:,} extra, {report.changed.total:,} changed "
        f"({report.source_count if report.source_count is not None else '?'} source records, "
        f"{report.target_count if report.target_count is not None else '?'} target records)"
    )
    shown = sum(len(k.items) < k.total for k in (report.missing, report.extra, report.changed))
    more = "; the lists are cut at --limit" if shown else ""
    out_console.print(f"{report.status}: {totals}{more}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
