"""Read-only ``parquet://DIR`` stores over snapshots written by ``vectorport export``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._registry import Backend, TestTarget

if TYPE_CHECKING:
    from .store import ParquetStore

__all__ = ["ParquetStore", "backend"]

backend = Backend(
    name="parquet",
    package=__name__,
    store=".store:ParquetStore",
    extra="parquet",
    requires=("pyarrow",),
    # read-only: the suites fill a snapshot by exporting the records (no server)
    tests=(TestTarget("{scheme}://{server}/{collection}", seed="._seed:seed"),),
)
"""This backend, as the ``vectorport.backends`` entry point registers it."""


def __getattr__(name: str) -> Any:
    # the store imports pyarrow: only when asked for
    if name == "ParquetStore":
        from .store import ParquetStore

        return ParquetStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
