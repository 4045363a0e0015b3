"""Gates: thresholds that turn a comparison into pass/fail, and a readable account of each
failure (the figure, the threshold, and diffs of the worst queries against the exact truth)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._metrics import Figures, Outcome, PairFigures, Status

if TYPE_CHECKING:
    from ._result import ComparisonResult

__all__ = ["GateFailure", "GateResult", "Gates"]


@dataclass(frozen=True)
class GateResult:
    """One gate checked on one store (or pair of stores), overall or for one filter."""

    gate: str
    """``max-missing``, ``min-recall``, ``max-violations``, ``min-overlap``, ``max-underfill`` or
    ``answered``."""
    subject: str
    """A store label, or ``"a vs b"`` for a pair."""
    filter: str | None
    """The filter group label, ``None`` for all queries."""
    value: float
    threshold: float
    passed: bool
    keys: tuple[str, ...] = ()
    """``max-missing``: the first missing keys (the message names them)."""

    @property
    def message(self) -> str:
        scope = "" if self.filter is None else f" [filter {self.filter}]"
        verdict = "ok" if self.passed else "FAILED"
        return f"{self.gate} {verdict}: {self.subject}{scope}: {_describe(self)}"

    def to_dict(self) -> dict[str, Any]:
        value = None if math.isnan(self.value) else self.value
        return {
            "gate": self.gate,
            "subject": self.subject,
            "filter": self.filter,
            "value": value,
            "threshold": self.threshold,
            "passed": self.passed,
            "message": self.message,
            "keys": list(self.keys),
        }


def _describe(r: GateResult) -> str:
    v = "n/a" if math.isnan(r.value) else None
    if r.gate == "min-recall":
        return f"recall@k {v or f'{r.value:.4f}'} {'>=' if r.passed else '<'} {r.threshold:g}"
    if r.gate == "min-overlap":
        return f"overlap@k {v or f'{r.value:.4f}'} {'>=' if r.passed else '<'} {r.threshold:g}"
    if r.gate == "max-underfill":
        return f"{v or f'{r.value:.2%}'} of queries under-filled {'<=' if r.passed else '>'} {r.threshold:g}"
    if r.gate == "max-violations":
        return f"{r.value:.0f} filter-scope violations {'<=' if r.passed else '>'} {r.threshold:g}"
    if r.gate == "max-missing":
        head = f"{r.value:.0f} records of the truth missing {'<=' if r.passed else '>'} {r.threshold:g}"
        if not r.keys:
            return head
        more = ", …" if len(r.keys) < r.value else ""
        return f"{head}: {', '.join(map(repr, r.keys))}{more}"
    return f"{r.value:.0f} queries refused or failed (allowed: {r.threshold:g})"


@dataclass(frozen=True)
class Gates:
    """Thresholds; ``None`` disables a gate.

    Parameters
    ----------
    max_missing
        Most records of the truth a store may lack (default 0: a lost record fails the store,
        whatever its recall; a store answering with the next-nearest record still ranks well).
    min_recall
        Every store's mean recall@k (near-ties count as hits) must reach this, overall and,
        with ``per_filter``, for each filter.
    max_violations
        Most results (in total, per store) whose metadata fails the query's filter.
    min_overlap
        Every pair of stores must share at least this mean overlap@k (overall and per filter).
    max_underfill
        Largest fraction of queries a store may answer with fewer results than the truth has.
    allow_refused
        Without it, a store that refuses or fails a query fails the ``answered`` gate whenever
        another gate is set. A store that answered no query at all fails it in any case.
    per_filter
        Check the rate gates for each filter group too, not only over all queries.
    """

    min_recall: float | None = None
    max_violations: int | None = None
    min_overlap: float | None = None
    max_underfill: float | None = None
    allow_refused: bool = False
    per_filter: bool = True
    max_missing: int | None = 0

    @property
    def active(self) -> bool:
        """Is any threshold set?"""
        return any(
            v is not None
            for v in (
                self.max_missing,
                self.min_recall,
                self.max_violations,
                self.min_overlap,
                self.max_underfill,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_missing": self.max_missing,
            "min_recall": self.min_recall,
            "max_violations": self.max_violations,
            "min_overlap": self.min_overlap,
            "max_underfill": self.max_underfill,
            "allow_refused": self.allow_refused,
            "per_filter": self.per_filter,
        }

    def evaluate(self, result: ComparisonResult) -> tuple[GateResult, ...]:
        """Check every gate on ``result``."""
        return tuple(self._check(result))

    def _scopes(
        self, overall: Figures | PairFigures, by_filter: dict[str, Any]
    ) -> Iterator[tuple[str | None, Any, bool]]:
        """Each scope with its figures and whether it may pass unanswered. The scopes are the
        same for the same queries whatever the stores answered; a filter nobody answered has no
        rate (the ``answered`` gate reports it), all queries unanswered fail."""
        yield None, overall, False
        if self.per_filter and (len(by_filter) > 1 or "none" not in by_filter):
            yield from ((label, f, True) for label, f in by_filter.items())

    def _rate(
        self, gate: str, subject: str, scopes: Iterator[tuple[str | None, Any, bool]], threshold: float
    ) -> Iterator[GateResult]:
        attr = {"min-recall": "recall", "max-underfill": "underfill", "min-overlap": "overlap"}[gate]
        for scope, fig, may_skip in scopes:
            value = float(getattr(fig, attr))
            if not _answered(fig):
                ok = may_skip
            elif math.isnan(value):
                ok = False
            else:
                ok = value >= threshold if gate.startswith("min") else value <= threshold
            yield GateResult(gate, subject, scope, value, threshold, ok)

    def _check(self, result: ComparisonResult) -> Iterator[GateResult]:
        for s in result.stores:
            if self.max_missing is not None and s.records is not None:
                r = s.records
                ok = r.missing <= self.max_missing
                yield GateResult(
                    "max-missing", s.label, None, float(r.missing), self.max_missing, ok, r.missing_keys
                )
            if self.active:
                bad = s.overall.refused + s.overall.errors
                allowed = max(s.overall.queries - 1, 0) if self.allow_refused else 0
                ok = bad <= allowed and s.overall.answered > 0
                yield GateResult("answered", s.label, None, float(bad), allowed, ok)
            if self.min_recall is not None:
                yield from self._rate(
                    "min-recall", s.label, self._scopes(s.overall, s.by_filter), self.min_recall
                )
            if self.max_violations is not None:
                n = s.overall.violations
                yield GateResult(
                    "max-violations", s.label, None, float(n), self.max_violations, n <= self.max_violations
                )
            if self.max_underfill is not None:
                scopes = self._scopes(s.overall, s.by_filter)
                yield from self._rate("max-underfill", s.label, scopes, self.max_underfill)
        if self.min_overlap is not None:
            for p in result.pairs:
                yield from self._rate(
                    "min-overlap", p.label, self._scopes(p.overall, p.by_filter), self.min_overlap
                )


def _answered(f: Figures | PairFigures) -> bool:
    return (f.answered if isinstance(f, Figures) else f.queries) > 0


class GateFailure(AssertionError):
    """A comparison failed a gate. ``str()`` is the readable report (figures and diffs)."""

    def __init__(self, report: str, failures: Sequence[GateResult]) -> None:
        super().__init__(report)
        self.failures = tuple(failures)


# ---------------------------------------------------------------------- readable diffs
def _fmt(d: float) -> str:
    return "       -" if math.isnan(d) else f"{d:8.5f}"


def query_diff(result: ComparisonResult, store: str, outcome: Outcome) -> list[str]:
    """A unified-diff-like view of one answer against the exact truth.

    ``' '`` a truth key the store returned, ``'-'`` a truth key it missed, ``'+'`` a key it
    returned that is not in the truth's top k (tagged ``violation``, ``unknown`` or ``wrong``).
    """
    q = result.queries[outcome.query]
    name = q.id or f"#{outcome.query}"
    head = f"    query {name}  filter {q.filter_label}"
    if outcome.status is not Status.OK or outcome.judgement is None:
        return [head, f"      {outcome.status.value}: {outcome.error}"]
    j = outcome.judgement
    head += f"  recall {j.recall:.2f}  returned {j.k_returned}/{j.k_expected}"
    lines = [head, f"      {'':1} {'key':<40} {'truth':>8} {store:>8}"]
    truth_keys = result.table.keys(result.truth.index, outcome.query)
    truth_dist = result.table.distances(outcome.query)
    got = dict(zip(outcome.keys, outcome.distances, strict=True))
    report = result.store(store)
    lost = report.records.missing_set if report.records is not None else frozenset()
    for key, d in zip(truth_keys, truth_dist, strict=True):
        mark = " " if key in got else "-"
        note = "  (missing: the store does not hold this record)" if key in lost else ""
        lines.append(f"      {mark} {key:<40} {_fmt(float(d))} {_fmt(got.get(key, math.nan))}{note}")
    replaced = any(key in lost for key in truth_keys)
    tags = {**dict.fromkeys(j.wrong, "wrong"), **dict.fromkeys(j.violations, "violation")}
    tags.update(dict.fromkeys(j.unknown, "unknown key"))
    index = result.truth.index
    for key, d in got.items():
        if key in truth_keys:
            continue
        tag = tags.get(key, "near-tie")
        if tag == "wrong" and replaced:
            tag = "in place of a missing record"
        extra = ""
        row = index.row.get(key)
        if tag == "violation" and row is not None:
            extra = "  metadata " + json.dumps(index.metadatas[row], sort_keys=True, default=str)[:120]
        lines.append(f"      + {key:<40} {'':>8} {_fmt(d)}  ({tag}){extra}")
    return lines


def _worst(
    outcomes: Sequence[Outcome], gate: str, members: set[int] | None, lost: frozenset[str] = frozenset()
) -> list[Outcome]:
    pool = [o for o in outcomes if members is None or o.query in members]

    def badness(o: Outcome) -> float:
        j = o.judgement
        if o.status is not Status.OK or j is None:
            return 10.0
        if gate == "max-violations":
            return len(j.out_of_scope)
        if gate == "max-missing":
            return sum(key in lost for key in j.truth_keys)
        if gate == "max-underfill":
            return (j.k_expected - j.k_returned) / max(j.k_expected, 1)
        return 1.0 - j.recall

    ranked = sorted(pool, key=badness, reverse=True)
    return [o for o in ranked if badness(o) > 0]


def explain(result: ComparisonResult, *, examples: int = 3) -> str:
    """The failed gates, then for each store involved its worst queries diffed against the exact
    truth (at most ``examples`` per kind of failed gate, each query shown once)."""
    failures = [g for g in result.gate_results if not g.passed]
    if not failures:
        return "every gate passed"
    lines = [f"{len(failures)} gate(s) failed (k={result.k}, {len(result.queries)} queries):"]
    lines.extend(f"  {g.message}" for g in failures)
    groups = {g.label: set(g.queries) for g in result.groups}
    # store -> gate kind -> query indices in scope (None: every query)
    scopes: dict[str, dict[str, set[int] | None]] = {}
    for g in failures:
        subjects = g.subject.split(" vs ") if g.gate == "min-overlap" else [g.subject]
        for label in subjects:
            kinds = scopes.setdefault(label, {})
            members = None if g.filter is None else groups.get(g.filter, set())
            if g.gate not in kinds:
                kinds[g.gate] = members
            elif kinds[g.gate] is not None:
                current = kinds[g.gate]
                kinds[g.gate] = None if members is None or current is None else current | members
    if examples <= 0:
        return "\n".join(lines)
    blocks: list[str] = []
    for label, kinds in scopes.items():
        report = result.store(label)
        shown: set[int] = set()
        block: list[str] = []
        lost = report.records.missing_set if report.records is not None else frozenset()
        for gate, members in kinds.items():
            for o in _worst(report.outcomes, gate, members, lost)[:examples]:
                if o.query not in shown:
                    shown.add(o.query)
                    block.extend(query_diff(result, label, o))
        if block:
            blocks.append(f"  {label} ({report.backend}, {report.url}):")
            blocks.extend(block)
    if blocks:
        lines.append("worst queries ('-' exact result the store missed, '+' result not in the exact top k):")
        lines.extend(blocks)
    else:  # a header over nothing read as if the diffs were lost
        lines.append(
            "no query's results differ from the exact truth: the gates failed on the records, not on a search"
        )
    return "\n".join(lines)
