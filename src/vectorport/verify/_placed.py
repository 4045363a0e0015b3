"""The verification of a pair under a run's placement — the one entry every command takes
(``migrate``'s finish, ``sync --verify``, ``export --verify``, ``verify``, ``diff``).

Both go through the one driver, :func:`~._verify.verify_stores`: in this process over the
opened stores (threads, with what the run already knows: the copy's digests, its read-back);
when the placement's tasks run elsewhere, through :func:`~._merged.verify_merged`, which gives
the driver the stores as URLs, each native scan segment of both read by a task the runner
places (:meth:`Runner.map <vectorport.engine.Runner.map>`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine._endpoints import Endpoint, StoreLike
from ..engine._progress import ProgressMode
from ..engine._runner import Placement, Runner
from ..engine._transform import MetadataPolicy, Transformer
from ..exceptions import ConfigurationError
from ._judge import VECTOR_TOLERANCE
from ._merged import verify_merged
from ._verify import VerifyReport, verify_stores

__all__ = ["Pair", "verify_placed"]


@dataclass
class Pair:
    """The two opened ends of a verification, the URLs (or stores) they came from, the
    transform the target's records went through, and the shard of the source compared."""

    source: StoreLike
    target: StoreLike
    src: Endpoint
    dst: Endpoint
    transformer: Transformer
    shard: tuple[int, int] = (0, 1)


def verify_placed(
    runner: Runner,
    placement: Placement,
    pair: Pair,
    options: Any,
    *,
    progress: ProgressMode | bool,
    here: bool = False,
    **known: Any,
) -> VerifyReport:
    """Compare ``pair.dst`` with ``pair.src``. ``options``: the command's (``metadata_policy``,
    ``text_key``, ``sample_queries``, ``k``, ``cap``, ``concurrency`` and, where declared,
    ``tolerance`` and ``method``). ``here``: compare in this process whatever the placement
    (re-embedded vectors are compared record by record). ``known``: what the run already
    knows, for :func:`~._verify.verify_stores` (``copied`` digests, a ``read_back``, …)."""
    tolerance = getattr(options, "tolerance", VECTOR_TOLERANCE)
    if placement.remote and not here:
        if not (isinstance(pair.source, str) and isinstance(pair.target, str)):
            raise ConfigurationError(
                f"engine {runner.name} opens the stores in its tasks: pass URLs, not store objects"
            )
        return verify_merged(
            pair.source,
            pair.target,
            runner=runner.map,
            segments=placement.segments or placement.shards,
            workers=placement.shards,
            engine=runner.name,
            metadata_policy=getattr(options, "metadata_policy", MetadataPolicy.ERROR),
            text_key=getattr(options, "text_key", None),
            sample_queries=options.sample_queries,
            k=options.k,
            tolerance=tolerance,
            cap=options.cap,
            source_options=getattr(options, "source_options", None),
            target_options=getattr(options, "target_options", None),
            progress=progress,
        )
    if "method" not in known and hasattr(options, "method"):
        known["method"] = options.method
    return verify_stores(
        pair.src.store,
        pair.dst.store,
        pair.transformer,
        source_label=pair.src.label,
        target_label=pair.dst.label,
        shard=pair.shard,
        sample_queries=options.sample_queries,
        k=options.k,
        tolerance=tolerance,
        cap=options.cap,
        concurrency=getattr(options, "concurrency", 4),
        progress=progress,
        **known,
    )
