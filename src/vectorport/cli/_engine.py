"""``--engine ray [--address auto] [--workers N]`` for ``migrate``, ``sync``, ``verify``, ``export`` and
``import``: the work runs as Ray tasks (:mod:`vectorport.ray`). Without the ``ray`` extra the
command says which extra to install (exit 3)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from ._common import out_console


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


def runner(engine: Engine, workers: int, address: str | None) -> Any:
    """The runner of ``--engine``: ``None`` (threads in this process) or a Ray runner."""
    if engine is Engine.local:
        return None
    from ..ray import RayRunner

    return RayRunner(workers, address)


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
