"""``vectorport export URL DIR`` and ``vectorport import DIR URL``: portable Parquet snapshots.

``import`` is ``migrate parquet://DIR URL`` with every option and exit code of ``migrate``.
``export`` exits 0 (written and verified), 1 (the snapshot read back differs from the source),
2 (a bad URL or option, the directory not empty, pyarrow missing), 3 (a backend failed).
"""

from __future__ import annotations

import inspect
import sys
import typing
from pathlib import Path
from typing import Annotated, Any

import typer

from .._exit import ExitCode
from ..exceptions import VectorportError
from ..snapshot._options import ExportOptions
from ._cmd_migrate import ExpectDigestOption, _print_verification
from ._cmd_migrate import migrate as migrate_command
from ._common import JsonOption, ReportOption, cli_text, cli_words, emit_json, fail, out_console, write_report
from ._engine import AddressOption, Engine, EngineOption, WorkersOption, print_workers, runner
from ._options import with_options

EXPORT_FLAGS = {"sample_queries": "--queries", "k": "-k"}
"""The flags whose name is not the option's own (``batch_size`` is ``--batch-size``)."""


@with_options(ExportOptions, EXPORT_FLAGS, {"progress": None})
def export(
    source: Annotated[str, typer.Argument(help="Store URL to export (must exist).")],
    directory: Annotated[Path, typer.Argument(help="Directory for the Parquet parts and _manifest.json.")],
    part_mb: Annotated[
        int, typer.Option("--part-mb", min=1, help="Approximate size of one Parquet part, in MiB.")
    ] = 128,
    report_path: ReportOption = None,
    as_json: bool = JsonOption,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    *,
    options: dict[str, Any],
) -> None:
    """Write a store as Parquet parts plus a manifest (a backup DuckDB or pandas read as is). Exit 0/1/3.

    With --engine ray each Ray task writes the parts of one scan segment into DIR (a directory
    every worker can write: a shared file system on a real cluster) and the manifest is written
    last, by the driver.
    """
    from ..snapshot import export as run_export

    if options["progress"] is None:
        options["progress"] = sys.stderr.isatty()
    try:
        report = run_export(
            source,
            directory,
            runner=runner(engine, workers, address),
            max_part_bytes=part_mb * 1024 * 1024,
            **options,
        )
    except VectorportError as exc:
        raise fail(exc) from None
    data = cli_words(report.to_dict())
    write_report(report_path, data)
    if as_json:
        emit_json(data)
        if report.exit_code != ExitCode.OK:
            raise typer.Exit(report.exit_code)
        return
    out_console.print(
        f"exported {report.count:,} records to {report.directory}: {report.parts} parts, "
        f"{report.bytes / 1e6:,.1f} MB, {report.rate:,.0f} rec/s\n"
        f"snapshot digest: {report.snapshot_digest} (import with --expect-digest to refuse "
        "any other or altered snapshot)",
        highlight=False,
        markup=False,
    )
    print_workers(report.to_dict())
    if report.verification is not None:
        _print_verification(report.verification)
    for note in report.notes:
        out_console.print(f"note: {cli_text(note)}", highlight=False, markup=False)
    out_console.print(f"status: [bold]{report.status}[/bold] (exit {report.exit_code})")
    if report.exit_code != ExitCode.OK:
        raise typer.Exit(report.exit_code)


def _import_command() -> Any:
    """``import DIR URL``: the ``migrate`` command with its first argument a snapshot directory."""
    from ..snapshot import snapshot_url

    def import_(directory: Path, target: str, expect_digest: str | None = None, **options: Any) -> None:
        migrate_command(snapshot_url(directory, expect_digest), target, **options)

    hints = typing.get_type_hints(migrate_command, include_extras=True)
    sig = inspect.signature(migrate_command)
    params = [p.replace(annotation=hints[p.name]) for p in sig.parameters.values()]
    directory = inspect.Parameter(
        "directory",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=Annotated[Path, typer.Argument(help="Snapshot directory (from `vectorport export`).")],
    )
    expect = inspect.Parameter(
        "expect_digest", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ExpectDigestOption
    )
    params = [directory, params[1], expect, *params[2:]]
    import_.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    import_.__annotations__ = {**{p.name: p.annotation for p in params}, "return": None}
    import_.__doc__ = (
        "Load a snapshot into any store: migrate parquet://DIR URL, same plan, checkpoint and "
        "verification. Exit 0 ok, 1 data, 3 failure, 4 refused, 5 quality."
    )
    return import_


def register(app: typer.Typer) -> None:
    app.command("export")(export)
    app.command("import")(_import_command())
