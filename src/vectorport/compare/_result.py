"""The result of a comparison and its JSON form: every figure, the gate verdicts and the run's
configuration (masked URLs, backend versions, index parameters, timings)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .._exit import Status as RunStatus
from .._report import Report
from ._gates import GateFailure, GateResult, Gates, explain
from ._metrics import Figures, Outcome, PairFigures, Relevance, Status, _clean
from ._queries import Query
from ._records import RecordCheck
from ._truth import FilterGroup, GroundTruth, TruthTable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ComparisonResult", "PairReport", "StoreReport"]


@dataclass(frozen=True)
class StoreReport:
    """One store's figures: over all queries and per filter group, plus per-query outcomes."""

    label: str
    backend: str
    url: str
    """Masked URL."""
    overall: Figures
    by_filter: dict[str, Figures]
    outcomes: tuple[Outcome, ...] = field(repr=False)
    description: dict[str, Any] = field(default_factory=dict, repr=False)
    """Backend versions, collection info, capabilities and query params."""
    records: RecordCheck | None = None
    """The records the store holds against the truth's (count, missing and extra keys)."""

    def to_dict(self, *, queries: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "backend": self.backend,
            "url": self.url,
            "records": None if self.records is None else self.records.to_dict(),
            "overall": self.overall.to_dict(),
            "by_filter": {label: fig.to_dict() for label, fig in self.by_filter.items()},
        }
        if queries:
            out["queries"] = [_outcome_dict(o) for o in self.outcomes]
        return out


def _outcome_dict(o: Outcome) -> dict[str, Any]:
    out: dict[str, Any] = {"query": o.query, "status": o.status.value}
    if o.status is not Status.OK:
        out["error"] = o.error
        return out
    out["latency_ms"] = None if math.isnan(o.latency) else round(o.latency * 1000, 4)
    j = o.judgement
    if j is not None:
        out.update(
            recall=j.recall,
            k_returned=j.k_returned,
            k_expected=j.k_expected,
            wrong=list(j.wrong),
            violations=list(j.out_of_scope),
            unknown=list(j.unknown),
            missing_required=list(j.missing_required),
            max_distance_error=j.max_distance_error,
        )
    if o.relevance is not None:
        out["ndcg"], out["rr"], out["hit"] = o.relevance
    return _clean(out)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class PairReport:
    """Agreement of two stores, overall and per filter group."""

    a: str
    b: str
    overall: PairFigures
    by_filter: dict[str, PairFigures]

    @property
    def label(self) -> str:
        return f"{self.a} vs {self.b}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "overall": self.overall.to_dict(),
            "by_filter": {label: f.to_dict() for label, f in self.by_filter.items()},
        }


@dataclass(frozen=True)
class ComparisonResult(Report):
    """What :func:`vectorport.compare` measured. ``passed`` tells whether every gate held.

    ``to_dict()``/``write_json()`` give every figure and the run configuration,
    ``write_html()`` a self-contained report, ``print_table()`` the terminal view and
    ``explain()`` a readable account of failed gates with per-query diffs.
    """

    k: int
    queries: tuple[Query, ...] = field(repr=False)
    groups: tuple[FilterGroup, ...]
    stores: tuple[StoreReport, ...]
    pairs: tuple[PairReport, ...]
    truth: GroundTruth = field(repr=False)
    table: TruthTable = field(repr=False)
    truth_relevance: Relevance | None
    config: dict[str, Any] = field(repr=False)
    timings: dict[str, float]
    gates: Gates = field(default_factory=Gates)
    gate_results: tuple[GateResult, ...] = ()

    SCHEMA: ClassVar[str] = "vectorport.compare/1"

    # ------------------------------------------------------------------ verdicts
    @property
    def status(self) -> RunStatus:
        """``passed`` (every gate held, exit 0) or ``failed`` (exit 1)."""
        return RunStatus.PASSED if self.passed else RunStatus.FAILED

    @property
    def passed(self) -> bool:
        """Every gate held (vacuously true without gates)."""
        return all(g.passed for g in self.gate_results)

    @property
    def failures(self) -> tuple[GateResult, ...]:
        """The gates that failed."""
        return tuple(g for g in self.gate_results if not g.passed)

    @property
    def filtered(self) -> bool:
        """Do any queries carry a filter?"""
        return any(g.where is not None for g in self.groups)

    def store(self, label: str) -> StoreReport:
        """The report of the store called ``label``."""
        for s in self.stores:
            if s.label == label:
                return s
        raise KeyError(f"no store labelled {label!r}; labels: {[s.label for s in self.stores]}")

    def check(self, gates: Gates | None = None, **thresholds: Any) -> ComparisonResult:
        """The same figures judged by other gates (``Gates`` or its keyword arguments)."""
        new = gates if gates is not None else Gates(**thresholds)
        return replace(self, gates=new, gate_results=new.evaluate(self))

    def explain(self, *, examples: int = 3) -> str:
        """Failed gates with the worst queries' diffs against the exact truth."""
        return explain(self, examples=examples)

    def raise_for_gates(self) -> None:
        """Raise :class:`GateFailure` (an ``AssertionError``) with :meth:`explain` when a gate failed."""
        if not self.passed:
            raise GateFailure(self.explain(), self.failures)

    # ------------------------------------------------------------------ outputs
    def to_dict(self, *, queries: bool = True) -> dict[str, Any]:
        """Every figure, the gate verdicts and the configuration, JSON-ready (``schema``,
        ``status`` and ``exit_code`` first). ``queries=False`` leaves out the per-query outcomes."""
        out = super().to_dict()
        if not queries:
            out["queries"] = None
            for store in out["stores"]:
                store.pop("queries", None)
        return out

    def sections(self) -> dict[str, Any]:
        """The figures, the gates and the configuration (:meth:`to_dict`'s body)."""
        return {
            "passed": self.passed,
            "k": self.k,
            "config": self.config,
            "timings": {name: round(v, 6) for name, v in self.timings.items()},
            "gates": self.gates.to_dict(),
            "gate_results": [g.to_dict() for g in self.gate_results],
            "filters": [
                {
                    "label": g.label,
                    "queries": len(g.queries),
                    "matching": g.matching,
                    "selectivity": g.selectivity,
                }
                for g in self.groups
            ],
            "truth_relevance": None
            if self.truth_relevance is None
            else _clean(self.truth_relevance.__dict__),
            "stores": [s.to_dict() for s in self.stores],
            "pairs": [p.to_dict() for p in self.pairs],
            "queries": [
                {"index": i, "id": q.id, "filter": q.filter_label, "text": q.text}
                for i, q in enumerate(self.queries)
            ],
        }

    def to_json(self, indent: int | None = 2, *, queries: bool = True) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(queries=queries), indent=indent, ensure_ascii=False, default=str)

    def write_json(self, path: str | Path, *, queries: bool = True) -> Path:
        """Write :meth:`to_json` to ``path``; returns the path."""
        out = Path(path)
        out.write_text(self.to_json(queries=queries) + "\n", encoding="utf-8")
        return out

    def to_html(self) -> str:
        """A self-contained HTML report (inline SVG plots, no scripts or fonts from the network)."""
        from ._html import render_html

        return render_html(self)

    def write_html(self, path: str | Path) -> Path:
        """Write :meth:`to_html` to ``path``; returns the path."""
        out = Path(path)
        out.write_text(self.to_html(), encoding="utf-8")
        return out

    def to_markdown(self) -> str:
        """The terminal tables as GitHub-flavoured Markdown (a CI job summary)."""
        from ._table import render_markdown

        return render_markdown(self)

    def write_markdown(self, path: str | Path) -> Path:
        """Write :meth:`to_markdown` to ``path``; returns the path."""
        out = Path(path)
        out.write_text(self.to_markdown(), encoding="utf-8")
        return out

    def write_report(self, path: str | Path) -> Path:
        """Write the report format ``path``'s suffix names: ``.md`` Markdown, otherwise HTML."""
        if Path(path).suffix.lower() in (".md", ".markdown"):
            return self.write_markdown(path)
        return self.write_html(path)

    def print_table(self, console: Console | None = None) -> None:
        """Print the rich terminal tables (per store, per filter, pairs, gates)."""
        from ._table import print_tables

        print_tables(self, console)

    def __str__(self) -> str:
        from ._table import render_text

        return render_text(self)
