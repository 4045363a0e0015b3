"""``plan()`` and ``verify()``: the library entry points beside :func:`~._engine.migrate`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..exceptions import ConfigurationError
from ._endpoints import StoreLike
from ._engine import migrate, open_pair
from ._options import parse_shard
from ._plan import MigrationPlan, build_plan
from ._progress import ProgressMode
from ._report import DEFAULT_CAP
from ._transform import MetadataPolicy, Transformer
from ._verify import VECTOR_TOLERANCE, VerifyReport, verify_stores

__all__ = ["migrate", "parse_shard", "plan", "verify"]


def plan(
    source: StoreLike,
    target: StoreLike,
    *,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    shard: str | tuple[int, int] | None = None,
    cap: int = DEFAULT_CAP,
    progress: ProgressMode | bool = False,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> MigrationPlan:
    """The plan of a migration, without writing anything. See :func:`migrate`.

    >>> import vectorport
    >>> from vectorport.migrate import plan
    >>> src = vectorport.connect("memory://doctest-plan", dimension=2)
    >>> _ = src.upsert([vectorport.Record("a", [1, 0], {"author": {"name": "ada"}})])
    >>> p = plan("memory://doctest-plan", "memory://doctest-plan-dst")
    >>> p.records, p.refused, p.target_exists
    (1, False, False)
    >>> src.drop()
    """
    segment = parse_shard(shard)
    src, dst = open_pair(source, target, source_options, target_options)
    try:
        transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
        return build_plan(src, dst, transformer, shard=segment, cap=cap, progress=progress)
    finally:
        dst.close()
        src.close()


def verify(
    source: StoreLike,
    target: StoreLike,
    *,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    shard: str | tuple[int, int] | None = None,
    sample_queries: int = 20,
    k: int = 10,
    tolerance: float = VECTOR_TOLERANCE,
    cap: int = DEFAULT_CAP,
    concurrency: int = 4,
    progress: ProgressMode | bool = False,
    method: str = "auto",
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> VerifyReport:
    """Compare ``target`` with ``source`` after the declared transforms; see :class:`VerifyReport`.

    Pass the ``metadata_policy`` and ``text_key`` the migration used, so the expected metadata
    is what that migration wrote. ``method``: ``digest`` (both stores read once, in parallel
    segments where the backend has them, then only differing key bins compared record by
    record), ``keyed`` (every source record fetched from the target by key) or ``auto``
    (digest, except for shards and targets that may round metadata floats).
    """
    segment = parse_shard(shard)
    src, dst = open_pair(source, target, source_options, target_options)
    try:
        if dst.naming is not None and dst.naming.refused:
            raise ConfigurationError(f"the target cannot exist: {dst.naming.reason()}")
        if not dst.exists:
            raise ConfigurationError(f"the target {dst.label} does not exist; nothing to verify")
        transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
        return verify_stores(
            src.store,
            dst.store,
            transformer,
            source_label=src.label,
            target_label=dst.label,
            shard=segment,
            sample_queries=sample_queries,
            k=k,
            tolerance=tolerance,
            cap=cap,
            concurrency=concurrency,
            progress=progress,
            method=method,
        )
    finally:
        dst.close()
        src.close()
