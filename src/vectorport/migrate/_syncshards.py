"""For shards of a sync run side by side by hand (``sync --shard I/N`` in N processes): what
no shard can judge alone, done once before and between the runs. The target is created (so
shards never race to create it), and the target's count is compared with the records of every
shard's state (:func:`~._sync.outside_shards`, which a runner of shards calls itself).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._endpoints import StoreLike, probe_target
from ._sync import _check_spec, _pair, outside_shards

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
    """Why each of the ``parts`` shards of a sync must run a full pass (see
    :func:`~._sync.outside_shards`), with ``target`` opened here."""
    dst = probe_target(target, **dict(target_options or {}))
    try:
        return outside_shards(state, dst, parts)
    finally:
        dst.close()
