"""Amazon S3 Vectors and Supabase Vector Buckets (``s3vectors://``, ``supabase://``). The local
S3-Vectors-compatible server to test against is a package of its own, :mod:`vectorport.bucketserver`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._registry import Backend, TestTarget

if TYPE_CHECKING:
    from .store import S3VectorsStore

__all__ = ["S3VectorsStore", "backend"]

backend = Backend(
    name="s3vectors",
    package=__name__,
    store=".store:S3VectorsStore",
    schemes=("s3vectors", "supabase"),
    extra="s3vectors",
    requires=("boto3",),
    tests=(
        TestTarget(
            "s3vectors://tests/{collection}?endpoint_url={server.url}",
            server="._server:local_server",
            params=(("write_rate", "0"),),  # the local server does not throttle: no pacing
        ),
    ),
)
"""This backend, as the ``vectorport.backends`` entry point registers it."""


def __getattr__(name: str) -> Any:
    # the store imports boto3: only when asked for
    if name == "S3VectorsStore":
        from .store import S3VectorsStore

        return S3VectorsStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
