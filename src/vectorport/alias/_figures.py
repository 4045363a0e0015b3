"""Rolling figures of the shadow log: per member and per filter shape, what ``status`` shows and
the switch's gates read (latency percentiles by :class:`vectorport.compare._metrics.Latency`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..compare._metrics import Latency
from ._registry import ShadowRow

__all__ = ["Figures", "by_shape", "figures"]


def _mean(values: Sequence[float | None]) -> float:
    vs = [v for v in values if v is not None]
    return sum(vs) / len(vs) if vs else math.nan


@dataclass(frozen=True)
class Figures:
    """A group of shadowed queries of one member."""

    queries: int
    """Shadowed queries answered (errors apart)."""
    errors: int
    overlap: float
    """Mean overlap@k with the served answer."""
    rbo: float
    top1: float
    """Share of queries whose top-1 key agrees."""
    score_diff: float
    serving: Latency
    candidate: Latency

    @property
    def p99_ratio(self) -> float:
        """The member's p99 latency over the serving store's, on the same queries."""
        if not self.serving.count or not self.candidate.count or self.serving.p99 <= 0:
            return math.nan
        return self.candidate.p99 / self.serving.p99

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["p99_ratio"] = self.p99_ratio
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def figures(rows: Sequence[ShadowRow]) -> Figures:
    """The figures of ``rows`` (one member's)."""
    ok = [r for r in rows if r.error is None]
    return Figures(
        queries=len(ok),
        errors=len(rows) - len(ok),
        overlap=_mean([r.overlap for r in ok]),
        rbo=_mean([r.rbo for r in ok]),
        top1=_mean([r.top1 for r in ok]),
        score_diff=_mean([r.score_diff for r in ok]),
        serving=Latency.of([r.serving_ms / 1000 for r in ok]),
        candidate=Latency.of([(r.candidate_ms or 0.0) / 1000 for r in ok]),
    )


def by_shape(rows: Sequence[ShadowRow]) -> dict[str, Figures]:
    """:func:`figures` per filter shape."""
    shapes = sorted({r.shape for r in rows})
    return {s: figures([r for r in rows if r.shape == s]) for s in shapes}
