"""The commands on a Ray cluster, by name: each is the command itself with a :class:`RayRunner`
(the same options, stages, checkpoints, states and report)."""

from __future__ import annotations

import os
from typing import Any

from ..migrate import MigrationReport
from ..migrate import run as migrate
from ..snapshot._export import ExportReport, export
from ..sync._report import SyncReport
from ..sync._sync import sync
from ..verify._api import verify
from ..verify._merged import MergedVerifyReport
from ._engine import RayRunner

__all__ = ["export_on_ray", "migrate_on_ray", "sync_on_ray", "verify_on_ray"]


def migrate_on_ray(
    source: str,
    target: str,
    *,
    workers: int = 2,
    address: str | None = None,
    max_retries: int = 3,
    **options: Any,
) -> MigrationReport:
    """:func:`vectorport.migrate.run` with its copy and verification run as ``workers`` Ray tasks
    (:class:`RayRunner`); ``options`` are the same keyword arguments, meaning the same.

    ``checkpoint`` must be on storage every worker sees (a shared file system on a real cluster).
    """
    return migrate(source, target, runner=RayRunner(workers, address, max_retries), **options)


def export_on_ray(
    source: str,
    directory: str | os.PathLike[str],
    *,
    workers: int = 2,
    address: str | None = None,
    max_retries: int = 3,
    **options: Any,
) -> ExportReport:
    """:func:`vectorport.snapshot.export` with each scan segment's parts written by a Ray task
    (:class:`RayRunner`); ``options`` are the same keyword arguments, meaning the same.

    ``directory`` must be one every worker writes and the driver reads (a shared file system on
    a real cluster).
    """
    return export(source, directory, runner=RayRunner(workers, address, max_retries), **options)


def sync_on_ray(
    source: str,
    target: str,
    *,
    state: str | os.PathLike[str],
    workers: int = 2,
    address: str | None = None,
    max_retries: int = 3,
    **options: Any,
) -> SyncReport:
    """:func:`vectorport.sync` of ``source`` into ``target`` (URLs) with its pass run as
    ``workers`` Ray tasks, one per shard (:class:`RayRunner`); ``options`` are the same keyword
    arguments, meaning the same; the report adds ``engine``, ``workers``, per-worker rates and
    each shard's report (``shards``).

    ``state`` must be on storage every worker sees (a shared file system on a real cluster):
    each shard keeps ``<state>.shard-I-of-N.sqlite`` and continues its interrupted pass from it
    (a retried task, or the next run). ``workers`` is part of those names: another number of
    workers starts with a first (full) sync of its own shards. ``address`` is passed to
    ``ray.init`` (``"auto"``: the running cluster; ``None``: a local one when Ray is not
    initialised yet). Stores must be reachable from every worker (a server, a shared
    directory): ``memory://`` is not.
    """
    runner = RayRunner(workers, address, max_retries)
    return sync(source, target, runner=runner, state=state, **options)


def verify_on_ray(
    source: str,
    target: str,
    *,
    workers: int = 2,
    address: str | None = None,
    segments: int | None = None,
    max_retries: int = 3,
    **options: Any,
) -> MergedVerifyReport:
    """:func:`vectorport.verify` with its reads run as Ray tasks (:class:`RayRunner`);
    ``options`` are the same keyword arguments, meaning the same (what Ray cannot honour, such
    as ``shard``, is refused before any I/O). The report adds ``engine``, ``workers`` and each
    task's rate.

    Each store is read as ``segments`` native scan segments (default ``workers``), one Ray task
    each. Stores must be reachable from every worker (a server, a shared directory):
    ``memory://`` is not.
    """
    report = verify(source, target, runner=RayRunner(workers, address, max_retries, segments), **options)
    assert isinstance(report, MergedVerifyReport)  # the Ray runner's verification is merged
    return report
