"""``plan()``: the library entry point beside :func:`~._engine.migrate`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._report import DEFAULT_CAP
from ..engine._endpoints import StoreLike, open_pair
from ..engine._options import parse_shard
from ..engine._progress import ProgressMode
from ..engine._transform import MetadataPolicy, Transformer
from ._engine import migrate
from ._plan import MigrationPlan, build_plan

__all__ = ["migrate", "parse_shard", "plan"]


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
    >>> from . import plan
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
