"""Ray Data over any vectorport URL, and ``migrate``, ``sync``, ``verify`` and ``export`` on a
Ray cluster (the ``ray`` extra).

* :func:`read_store` — a ``ray.data.Dataset`` of a store's records, one read task per scan
  segment (``store.scan(segment=(i, n))``), as Arrow columns ``key``, ``vector``
  (fixed-size float32 list), ``metadata`` (JSON text) and ``text``;
* :func:`write_store` — write a dataset with those columns through the store's upsert
  (idempotent: a retried task rewrites the same records);
* :class:`RayRunner` and :func:`migrate_on_ray` — ``vectorport migrate --engine ray``:
  :func:`vectorport.migrate` itself (the same options, plan, checkpoints and report) with its
  copy run as one Ray task per shard and its verification by Ray tasks (as :func:`verify_on_ray`);
* :func:`sync_on_ray` — ``vectorport sync --engine ray``: :func:`vectorport.sync` itself (the
  same options, passes, states and report) with :class:`RayRunner` placing its pass as one Ray
  task per shard of the source, each with its own state file;
* :func:`export_on_ray` — ``vectorport export --engine ray``: :func:`vectorport.snapshot.export`
  (the same options, manifest, verification and report) with each scan segment's Parquet parts
  written by a Ray task (``import --engine ray`` is ``migrate --engine ray`` from
  ``parquet://DIR``);
* :func:`verify_on_ray` — ``vectorport verify --engine ray``: :func:`vectorport.migrate.verify`
  itself (the same options, report and progress) with :class:`RayRunner` reading each store's
  scan segments as Ray tasks: per-key-bin digests merged on the driver, only the differing key
  bins compared record by record.

``import vectorport`` never imports this package, so Ray stays out of a plain install.
"""

from __future__ import annotations

import importlib.util

from ..exceptions import NotInstalledError

_missing = next((m for m in ("ray", "pyarrow") if importlib.util.find_spec(m) is None), None)
if _missing is not None:
    _exc = NotInstalledError("ray", "ray", _missing)
    _exc.args = (
        f"vectorport.ray and --engine ray need the Python module {_missing!r}, which is not "
        "installed; install it with: pip install 'vectorport[ray]'",
    )
    raise _exc

from ._api import export_on_ray, migrate_on_ray, sync_on_ray, verify_on_ray  # noqa: E402
from ._data import StoreDatasink, StoreDatasource, read_store, write_store  # noqa: E402
from ._engine import RayRunner  # noqa: E402

__all__ = [
    "RayRunner",
    "StoreDatasink",
    "StoreDatasource",
    "export_on_ray",
    "migrate_on_ray",
    "read_store",
    "sync_on_ray",
    "verify_on_ray",
    "write_store",
]
