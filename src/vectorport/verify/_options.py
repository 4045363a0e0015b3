"""How :func:`vectorport.verify` runs: its options, declared once (keyword arguments, CLI flags,
report ``options``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._options import RunOptions, option
from .._report import DEFAULT_CAP
from ..engine._options import parse_shard
from ..engine._progress import ProgressMode
from ..engine._transform import MetadataPolicy
from ._judge import VECTOR_TOLERANCE

__all__ = ["VerifyOptions"]


@dataclass(frozen=True)
class VerifyOptions(RunOptions):
    """How :func:`vectorport.migrate.verify` runs (its keyword arguments)."""

    COMMAND: ClassVar[str] = "verify"

    metadata_policy: MetadataPolicy = option(
        MetadataPolicy.ERROR,
        "The policy the migration used (error, flatten, stringify or drop): the expected "
        "metadata is the source's, transformed.",
    )
    text_key: str | None = option(None, "The source metadata key holding the text, as the migration used it.")
    shard: tuple[int, int] = option(
        (0, 1), "Verify only shard I of N (0-based) of the source.", runners=("local",), metavar="I/N"
    )
    sample_queries: int = option(20, "Sampled queries (0: none).", minimum=0)
    k: int = option(10, "Top-k of the sampled queries.", minimum=1)
    tolerance: float = option(VECTOR_TOLERANCE, "Vector tolerance (relative, float32 ulps).", cli=False)
    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    # Ray's parallelism is its workers, each reading one native scan segment
    concurrency: int = option(4, "Pages compared in parallel (threads).", runners=("local",), minimum=1)
    progress: ProgressMode = option(
        ProgressMode.NONE,
        "Progress on stderr: bar, json (JSON Lines) or none (CLI default: bar when stderr is a terminal).",
        metavar="MODE",
    )
    method: str = option(
        "auto",
        "digest (both stores read once, then only differing key bins record by record), keyed "
        "(each source record fetched from the target by key) or auto (digest, except for shards "
        "and float-rounding targets).",
        metavar="METHOD",
        # Ray merges per-segment digests: it has no keyed pass
        only={"ray": ("auto", "digest")},
    )
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)
    target_options: Mapping[str, Any] = option(dict, "Options of the target store.", cli=False, factory=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))
