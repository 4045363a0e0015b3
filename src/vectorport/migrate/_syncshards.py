"""What the runner of a sharded ``sync`` decides once for all its shards (``sync --engine ray``).

Each shard is the ordinary :func:`~._sync.sync` of one source scan segment with its own state
file; two things no shard can judge alone happen before any runs: the target is created (so
shards never race to create it), and the target's count is compared with the records of every
shard's state (a shard holds only part of the target, so its own count proves nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._features import Feature
from ._checkpoint import shard_path
from ._endpoints import StoreLike, probe_target
from ._sync import _check_spec, _pair
from ._syncstate import recorded

__all__ = ["changed_outside", "prepare_target"]


def prepare_target(
    source: StoreLike,
    target: StoreLike,
    *,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> tuple[str, str]:
    """Check the pair and create the target with the source's spec when it is missing; return
    the two labels. Run once before the shards of a sync, so they never race to create it."""
    src, dst = _pair(source, target, source_options, target_options)
    try:
        _check_spec(src, dst)
        return src.label, dst.label
    finally:
        dst.close()
        src.close()


def changed_outside(
    state: str | os.PathLike[str],
    target: StoreLike,
    parts: int,
    *,
    target_options: Mapping[str, Any] | None = None,
) -> str | None:
    """Why each of the ``parts`` shards of a sync must run a full pass: the target's count
    differs from the records all the shards' states hold (it was written outside sync). ``None``
    when it matches, when counting is not cheap (no ``native_count``), or when a shard has a
    first sync to run or a pass to continue (it decides for itself then)."""
    held = [recorded(shard_path(state, (i, parts))) for i in range(parts)]
    if any(h is None for h in held):
        return None
    dst = probe_target(target, **dict(target_options or {}))
    try:
        if not dst.exists or Feature.NATIVE_COUNT not in dst.capabilities.features:
            return None
        count = dst.store.count()
    finally:
        dst.close()
    total = sum(h for h in held if h is not None)
    if count == total:
        return None
    return (
        f"the target holds {count} records, the sync states of its {parts} shards {total}: it was "
        "changed outside sync, so it is read again"
    )
