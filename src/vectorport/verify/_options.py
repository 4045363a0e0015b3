"""How :func:`vectorport.verify` runs: its options, declared once (keyword arguments, CLI flags,
report ``options``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, fields
from typing import Any, ClassVar

from .._options import RunOptions, option
from .._report import DEFAULT_CAP
from ..engine._options import parse_shard
from ..engine._progress import ProgressMode
from ..engine._transform import MetadataPolicy
from ._judge import VECTOR_TOLERANCE

__all__ = ["PairOptions", "VerifyOptions"]


@dataclass(frozen=True)
class PairOptions(RunOptions):
    """What every command that compares the records of two stores takes (:class:`VerifyOptions`,
    :class:`~vectorport.diff.DiffOptions`), declared once: how the target's records were
    transformed, the progress, and the stores' own options. The last three are keyword-only, so in
    each command's keyword arguments and report ``options`` they follow the command's own fields."""

    metadata_policy: MetadataPolicy = option(
        MetadataPolicy.ERROR,
        "The policy the migration used (error, flatten, stringify or drop): the expected "
        "metadata is the source's, transformed.",
    )
    text_key: str | None = option(None, "The source metadata key holding the text, as the migration used it.")
    _: KW_ONLY
    progress: ProgressMode = option(
        ProgressMode.NONE,
        "Progress on stderr: bar, json (JSON Lines) or none (CLI default: bar when stderr is a terminal).",
        metavar="MODE",
    )
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)
    target_options: Mapping[str, Any] = option(dict, "Options of the target store.", cli=False, factory=True)

    def pair_options(self) -> dict[str, Any]:
        """These options by name, as another command comparing the same pair takes them."""
        return {f.name: getattr(self, f.name) for f in fields(PairOptions)}


@dataclass(frozen=True)
class VerifyOptions(PairOptions):
    """How :func:`vectorport.migrate.verify` runs (its keyword arguments)."""

    COMMAND: ClassVar[str] = "verify"

    shard: tuple[int, int] = option(
        (0, 1), "Verify only shard I of N (0-based) of the source.", runners=("local",), metavar="I/N"
    )
    sample_queries: int = option(20, "Sampled queries (0: none).", minimum=0)
    k: int = option(10, "Top-k of the sampled queries.", minimum=1)
    tolerance: float = option(VECTOR_TOLERANCE, "Vector tolerance (relative, float32 ulps).", cli=False)
    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    # Ray's parallelism is its workers, each reading one native scan segment
    concurrency: int = option(4, "Pages compared in parallel (threads).", runners=("local",), minimum=1)
    method: str = option(
        "auto",
        "digest (both stores read once, then only differing key bins record by record), keyed "
        "(each source record fetched from the target by key) or auto (digest, except for shards "
        "and float-rounding targets).",
        metavar="METHOD",
        # Ray merges per-segment digests: it has no keyed pass
        only={"ray": ("auto", "digest")},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))
