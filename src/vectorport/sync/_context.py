"""One sync run's context: its endpoints, options, placement, state and the report being built,
opened over a checked pair of stores (and closed after)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .._embedder import Embedder
from .._models import JSON, Record
from .._paths import default_state
from ..engine._checkpoint import shard_path
from ..engine._endpoints import Endpoint, StoreLike, open_pair
from ..engine._runner import Placement
from ..engine._transform import Transformer
from ..exceptions import ConfigurationError
from ..migrate._copy import DEFAULT_BATCH
from ..migrate._plan import planned_target_spec, target_conflicts
from ..migrate._reembed import load_embedder, reembedded
from ._options import SyncOptions
from ._report import SyncReport
from ._state import SyncState

__all__ = ["SyncContext", "check_spec", "opened", "pair_of", "state_path"]


def check_spec(src: Endpoint, dst: Endpoint, embedder: Embedder | None = None) -> None:
    """Create a missing target (with the re-embedding model's dimension, and the model recorded);
    refuse one whose vectors are not those the sync writes (another dimension, metric or
    embedding model: :func:`~vectorport.migrate._plan.target_conflicts`, migrate's rule)."""
    dim, model = (embedder.dimension, embedder.model_id) if embedder is not None else (None, None)
    if not dst.exists:
        dst.ensure(planned_target_spec(src.store.spec, dst, dim, model))
        return
    conflicts = target_conflicts(src.store.spec, dst.store.spec, dim, model, "sync")
    if conflicts:
        raise ConfigurationError(
            f"the target {dst.label} cannot take this sync's vectors: " + "; ".join(conflicts)
        )


def pair_of(
    source: StoreLike,
    target: StoreLike,
    source_options: Mapping[str, Any] | None,
    target_options: Mapping[str, Any] | None,
) -> tuple[Endpoint, Endpoint]:
    """Open both ends; refuse a target that is the source."""
    src, dst = open_pair(source, target, source_options, target_options)
    if src.identity == dst.identity:
        dst.close()
        src.close()
        raise ConfigurationError(
            f"the source and the target are the same collection ({src.label}); "
            "sync copies into another collection"
        )
    return src, dst


@dataclass
class SyncContext:
    """One sync run (or one shard's pass of it, in a Ray task): its endpoints, options, state
    and the report being built. The driver's context has no state when the runner's shards keep
    their own (the placement is not :attr:`~vectorport.engine.Placement.here`)."""

    source: StoreLike
    target: StoreLike
    options: SyncOptions
    placement: Placement
    src: Endpoint
    dst: Endpoint
    transformer: Transformer
    report: SyncReport
    started: float
    state: SyncState | None = None
    segment: tuple[int, int] = (0, 1)
    batch: int = DEFAULT_BATCH
    embedder: Embedder | None = None
    """``reembed``: the model the written records' vectors are made with."""

    @property
    def prepare(self) -> Callable[[Sequence[Record]], list[Record]] | None:
        """What the writers do to a batch before writing it: re-embed it, with ``reembed``."""
        return None if self.embedder is None else partial(reembedded, self.embedder)


def _context(
    source: StoreLike,
    target: StoreLike,
    options: SyncOptions,
    pair: tuple[Endpoint, Endpoint],
    segment: tuple[int, int],
    placement: Placement,
) -> SyncContext:
    """The context of a run over the opened ``pair``: placed here, the state of ``segment`` is
    opened in this process (else the report names the state every shard's file sits beside)."""
    src, dst = pair
    rules, reembed = dst.capabilities.metadata, options.reembed
    transformer = Transformer(
        rules, options.metadata_policy, options.text_key, needs_text=reembed is not None
    )
    path = state_path(options.state, src, dst)
    report = SyncReport(src.label, dst.label, delete=options.delete, options=options.to_dict())
    report.sync.unwritable.cap = options.cap
    ctx = SyncContext(source, target, options, placement, src, dst, transformer, report, time.monotonic())
    ctx.segment = segment
    ctx.embedder = load_embedder(reembed)[0] if reembed else None
    ctx.batch = min(options.batch_size or DEFAULT_BATCH, dst.capabilities.max_write_batch)
    report.state = str(path)
    if placement.here:
        identity: dict[str, JSON] = {"source": src.label, "target": dst.label}
        if segment[1] > 1:
            identity["shard"] = list(segment)
        report.state = str(shard_path(path, segment))
        ctx.state = SyncState(shard_path(path, segment), identity)
    return ctx


def state_path(state: str | os.PathLike[str] | None, src: Endpoint, dst: Endpoint) -> Path:
    """The run's state file (a shard's sits beside it: :func:`~._checkpoint.shard_path`); by
    default the one the command line uses for the same two stores."""
    return Path(state) if state is not None else default_state(src.label, dst.label)


@contextmanager
def opened(
    source: StoreLike, target: StoreLike, options: SyncOptions, segment: tuple[int, int], placement: Placement
) -> Iterator[SyncContext]:
    """The run's context over the opened pair (see :func:`_context`); everything closed after."""
    pair = pair_of(source, target, options.source_options, options.target_options)
    ctx: SyncContext | None = None
    try:
        ctx = _context(source, target, options, pair, segment, placement)
        yield ctx
    finally:
        if ctx is not None and ctx.state is not None:
            ctx.state.close()
        pair[1].close()
        pair[0].close()
