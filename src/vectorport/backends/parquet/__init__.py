"""``parquet://DIR`` stores: snapshot directories (Parquet parts plus a manifest) as ``vectorport
export`` writes them, read and written in place."""

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
    # a directory, no server. In the migration matrix as one target only: its other pairs would
    # add ~2 minutes of the same code, and every backend's import test reads a snapshot already
    tests=(TestTarget("{scheme}://{server}/{collection}", pairs="target"),),
)
"""This backend, as the ``vectorport.backends`` entry point registers it."""


def __getattr__(name: str) -> Any:
    # the store imports pyarrow: only when asked for
    if name == "ParquetStore":
        from .store import ParquetStore

        return ParquetStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
