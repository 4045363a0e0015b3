"""Portable snapshots: a store as Parquet parts plus a manifest, and back.

``export(URL, DIR)`` writes the snapshot and checks it against the source. A snapshot directory
is a store, ``parquet://DIR`` (:class:`vectorport.backends.parquet.ParquetStore`), so
:func:`import_snapshot` is :func:`vectorport.migrate.run` from it: the same plan, transforms,
checkpoint and verification as any migration. Needs the ``parquet`` extra (pyarrow).
"""

from __future__ import annotations

import os
from typing import Any

from ..engine._endpoints import StoreLike
from ..migrate import MigrationReport
from ..migrate import run as migrate
from ._export import ExportReport, export, snapshot_url
from ._options import ExportOptions

__all__ = ["ExportOptions", "ExportReport", "export", "import_snapshot", "snapshot_url"]


def import_snapshot(
    directory: str | os.PathLike[str],
    target: StoreLike,
    *,
    expect_digest: str | None = None,
    **options: Any,
) -> MigrationReport:
    """Load the snapshot in ``directory`` into ``target``: ``migrate(parquet://DIR, target)``,
    with every option of :func:`vectorport.migrate`.

    ``expect_digest``: the snapshot digest export reported (``ExportReport.snapshot_digest``,
    ``sha256:…``); a snapshot with any other digest — altered after export, even with every
    checksum in its manifest recomputed — is refused before anything is written."""
    return migrate(snapshot_url(directory, expect_digest), target, **options)
