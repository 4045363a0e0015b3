"""``--engine ray [--address auto] [--workers N]`` for ``migrate``, ``sync``, ``verify``, ``export`` and
``import``: the work runs as Ray tasks (:mod:`vectorport.ray`). Without the ``ray`` extra the
command says which extra to install (exit 3)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from .._exit import ExitCode
from ..exceptions import VectorportError
from ._common import emit_json, fail, out_console


class Engine(StrEnum):
    local = "local"
    ray = "ray"


EngineOption = Annotated[
    Engine,
    typer.Option("--engine", case_sensitive=False, help="local (one process) or ray (a Ray cluster)."),
]
AddressOption = Annotated[
    str | None,
    typer.Option("--address", help="--engine ray: the cluster for ray.init (auto: the running one)."),
]
WorkersOption = Annotated[
    int, typer.Option("--workers", min=1, help="--engine ray: Ray tasks, one shard or scan segment each.")
]


def print_workers(report: dict[str, Any]) -> None:
    """One line per Ray task of a report that has ``per_worker`` (nothing for one process)."""
    if report.get("engine") != "ray":
        return
    rate = report.get("records_per_second") or 0
    out_console.print(f"engine: ray, {report['workers']} workers ({rate:,.0f} rec/s)", highlight=False)
    for w in report.get("per_worker", []):
        out_console.print(
            f"  {w['task']} on {w['node']} (pid {w['pid']}): {w['records']:,} records, "
            f"{w['records_per_second'] or 0:,.0f} rec/s",
            highlight=False,
            markup=False,
        )


def run_on_ray(source: str, target: str, checkpoint: Path, as_json: bool, **options: Any) -> None:
    """Run the migration on Ray, print its report, exit with its code."""
    try:
        from ..ray import migrate_on_ray

        report = migrate_on_ray(source, target, checkpoint=checkpoint, **options)
    except VectorportError as exc:
        raise fail(exc) from None
    if as_json:
        emit_json(report.to_dict())
    else:
        data = report.to_dict()
        out_console.print(
            f"{report.records:,} records by {report.workers} Ray workers "
            f"({data['records_per_second'] or 0:,.0f} rec/s); counts source {report.source_count} / "
            f"target {report.target_count}",
            highlight=False,
        )
        for w in report.per_worker:
            out_console.print(
                f"  shard {w['shard']} on {w['node']} (pid {w['pid']}): {w['records']:,} records, "
                f"{w['records_per_second'] or 0:,.0f} rec/s",
                highlight=False,
            )
        if report.verification is not None:
            from ._cmd_migrate import _print_verification  # that module imports this one

            _print_verification(report.verification)
            print_workers(report.verification.to_dict())
        for note in report.notes:
            out_console.print(f"note: {note}", highlight=False, markup=False)
        out_console.print(f"status: [bold]{report.status}[/bold] (exit {report.exit_code})")
    if report.exit_code != ExitCode.OK:
        raise typer.Exit(report.exit_code)
