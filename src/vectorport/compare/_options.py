"""How a comparison runs and what it gates: one frozen declaration, :class:`CompareOptions`.

Like the migration's options (the mechanism of :mod:`vectorport._options`), each field says its help
text; the keyword arguments of :func:`vectorport.compare`, the flags of ``vectorport compare``
(named by the CLI from the field names) and the :class:`Gates` of a run derive from it.

>>> o = CompareOptions(k=5, min_recall=0.9)
>>> o.gates().min_recall, o.gates().max_missing
(0.9, 0)
>>> CompareOptions(warmup=-1)
Traceback (most recent call last):
...
vectorport.exceptions.ConfigurationError: warmup must be >= 0, got -1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .._options import RunOptions, option
from ..exceptions import ConfigurationError
from ._gates import Gates

__all__ = ["CompareOptions"]


@dataclass(frozen=True)
class CompareOptions(RunOptions):
    """The keyword arguments of :func:`vectorport.compare` (beyond the stores, the queries and
    where the truth, the filters, the embedder and the query params come from).

    The gates (``min_recall``, ``max_violations``, ``min_overlap``, ``max_underfill``,
    ``max_missing``, ``allow_refused``) are those of :class:`Gates`; ``None`` disables one.
    ``max_missing`` defaults to 0: a store lacking any record of the truth fails, whatever its
    recall. ``eps``: a result within ``eps * (1 + |d_k|)`` of the true k-th distance is a hit
    (as ann-benchmarks counts recall). ``distance_tol``: the largest |store distance - exact
    distance| counted as agreement. ``rbo_p``: the persistence of rank-biased overlap.
    ``include``: what the stores return per match (default: the store's default, metadata and
    text), so latency reflects a real retrieval call.
    """

    COMMAND: ClassVar[str] = "compare"

    k: int = option(10, "Results per query.")
    min_recall: float | None = option(None, "Gate: mean recall@k of every store (and filter).")
    max_violations: int | None = option(None, "Gate: results outside the filter, per store.")
    min_overlap: float | None = option(None, "Gate: mean overlap@k of every pair of stores.")
    max_underfill: float | None = option(None, "Gate: fraction of queries answered with too few results.")
    max_missing: int | None = option(
        0, "Gate: records of the truth a store may lack (any recall).", minimum=0
    )
    allow_refused: bool = option(False, "Do not fail when a store refuses a query.")
    concurrency: int = option(1, "Query threads per store.")
    warmup: int = option(10, "Untimed queries per store first.")
    seed: int = option(0, "Seed of the sampled queries.")
    include: Sequence[str] | None = option(None, "What the stores return per match.", cli=False)
    eps: float = option(1e-4, "Near-tie tolerance of recall.", cli=False)
    distance_tol: float = option(1e-3, "Largest distance difference counted as agreement.", cli=False)
    rbo_p: float = option(0.9, "Persistence of rank-biased overlap.", cli=False)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ConfigurationError(f"k must be a positive integer, got {self.k!r}")
        super().__post_init__()
        if self.warmup < 0:
            raise ConfigurationError(f"warmup must be >= 0, got {self.warmup}")
        for name in ("min_recall", "min_overlap", "max_underfill"):  # fractions
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"{name} is a fraction between 0 and 1, got {value}")
        for name in ("max_violations", "max_missing"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigurationError(f"{name} is a count (0 or more), got {value}")

    def gates(self) -> Gates:
        """The thresholds these options set."""
        return Gates(
            self.min_recall,
            self.max_violations,
            self.min_overlap,
            self.max_underfill,
            allow_refused=self.allow_refused,
            max_missing=self.max_missing,
        )
