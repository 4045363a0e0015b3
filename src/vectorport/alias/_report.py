"""What every alias call returns: the alias as it stands after the call, what the call did, and
for ``status`` the shadow figures; a :class:`~vectorport._report.Report` (``--json``, exit code
from the one table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .._exit import Status
from .._report import Report
from ..compare._metrics import Relevance
from ..sync._lease import Follower
from ._backfill import BackfillStats
from ._figures import Figures
from ._gates import Gate
from ._model import AliasState
from ._quality import K
from ._registry import QualityRow, ShadowRow

__all__ = ["AliasReport"]


@dataclass
class AliasReport(Report):
    """The outcome of one ``alias`` call.

    ``status``: ``applied`` (the change was made), ``refused`` (a switch's gate failed: nothing
    changed; ``reasons`` names each), ``healthy`` / ``findings`` (``status``: repairs pending or
    member errors are findings).
    """

    SCHEMA: ClassVar[str] = "vectorport.alias/1"

    action: str
    state: AliasState
    registry: str
    status: Status = Status.APPLIED
    reasons: list[str] = field(default_factory=list)
    gates: list[Gate] = field(default_factory=list)
    backfill: BackfillStats | None = None
    figures: dict[str, Figures] = field(default_factory=dict)
    """Per non-serving member URL (masked): all its shadowed queries."""
    shapes: dict[str, dict[str, Figures]] = field(default_factory=dict)
    """Per member, per filter shape."""
    repairs: int = 0
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    rows: dict[str, list[ShadowRow]] = field(default_factory=dict)
    """``status``: the shadow log per member (masked URL), what the HTML report plots."""
    followers: dict[str, Follower] = field(default_factory=dict)
    """``status``: the ``sync --follow`` runs between two members, by ``SOURCE -> TARGET``."""
    notes: list[str] = field(default_factory=list)
    """What the operator should know (``switch``: what became of a capture-fed candidate's follower)."""
    quality: dict[str, Relevance] = field(default_factory=dict)
    """``status --queries``: per member (masked URL), its quality on the labelled queries."""
    quality_recorded: list[QualityRow] = field(default_factory=list)
    """``status``: the newest quality the registry holds of each member in each model (what
    ``status --queries`` measured, now or before): the HTML report's quality section."""
    seconds: float = 0.0

    def sections(self) -> dict[str, Any]:
        s = self.state
        return {
            "action": self.action,
            "alias": s.name,
            "registry": self.registry,
            "phase": s.phase.value,
            "version": s.version,
            "sample": s.sample,
            "members": [
                {
                    "url": m.label,
                    "role": m.role.value,
                    "feed": m.feed.value,
                    "embedding_model": m.embedding_model,
                    "backfilled": m.backfilled,
                }
                for m in s.members
            ],
            "reasons": self.reasons,
            "gates": [g.to_dict() for g in self.gates],
            "backfill": None if self.backfill is None else vars(self.backfill),
            "shadow": {url: f.to_dict() for url, f in self.figures.items()},
            "shapes": {url: {sh: f.to_dict() for sh, f in by.items()} for url, by in self.shapes.items()},
            "quality": {url: vars(q) for url, q in self.quality.items()},
            "quality_recorded": [vars(q) for q in self.quality_recorded],
            "followers": {pair: f.to_dict() for pair, f in self.followers.items()},
            "notes": self.notes,
            "repairs_pending": self.repairs,
            "counters": self.counters,
            "events": self.events,
            "seconds": round(self.seconds, 3),
        }

    def render(self) -> str:
        """The human text of the report (what the command prints without ``--json``)."""
        s = self.state
        lines = [
            f"alias {s.name}: {s.phase.value} (version {s.version}, sample {s.sample:g}): {self.status.value}"
        ]
        lines += [
            f"  {m.role.value:<9} {m.label} ({m.feed.value}, model {m.embedding_model or 'unknown'})"
            for m in s.members
        ]
        if self.backfill is not None:
            b = self.backfill
            lines.append(
                f"  backfill: {b.copied} records copied, {b.touched} keys written meanwhile, "
                f"{b.recopied} re-copied, {b.seconds:.1f} s"
            )
        for gate in self.gates:
            lines.append(f"  gate {gate.name:<9} {'ok  ' if gate.ok else 'FAIL'} {gate.detail}")
        serving = s.serving.label
        for url, f in self.figures.items():
            when = " (while it shadowed, before it served)" if url == serving else ""
            if not f.queries:
                lines.append(f"  shadow {url}{when}: no shadowed queries answered yet, {f.errors} errors")
                continue
            lines.append(
                f"  shadow {url}{when}: {f.queries} queries, {f.errors} errors, overlap@k "
                f"{f.overlap:.3f}, rbo {f.rbo:.3f}, top-1 {f.top1:.3f}, p99 {f.candidate.p99:.2f} ms "
                f"vs serving {f.serving.p99:.2f} ms"
            )
            for shape, g in self.shapes.get(url, {}).items():
                lines.append(
                    f"    {shape:<30} {g.queries:>6} queries  overlap@k {g.overlap:.3f}  errors {g.errors}"
                )
        for url, q in self.quality.items():
            lines.append(
                f"  quality {url}: nDCG@{K} {q.ndcg:.3f}, MRR {q.mrr:.3f}, hit@{K} {q.hit:.3f} "
                f"on {q.queries} labelled queries"
            )
        if self.counters:
            for url, counts in sorted(self.counters.items()):
                shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                lines.append(f"  counters {url}: {shown}")
        lines += [f"  follower {pair}: {f.describe()}" for pair, f in self.followers.items()]
        lines.append(f"  repairs pending: {self.repairs}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  refused: {r}" for r in self.reasons]
        return "\n".join(lines)
