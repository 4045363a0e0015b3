"""The switch's evidence: each gate a named check with the value it saw and the bar it held
against; the switch is refused unless every gate holds.

Gates: enough shadowed queries, overlap@k with the served answers, the candidate's p99 latency
against the serving store's on the same queries, no repair pending, the backfill done, and a
digest verification of the pair (:func:`vectorport.migrate.verify`) finding the data equal. The
app keeps writing while the verification reads both stores, so a key it reports different is
read again from both (:data:`RECHECKS`): a write in flight (the serving store written, the
candidate not yet) is not a difference, nor is a key queued for repair (the repairs gate holds
the switch for it); a key still different is.

When the candidate's embedding model is another one, the overlap with the served answers is
information, not a gate (two models rank differently: that is the point of the change), and
the data check compares keys, text and metadata (the vectors are the other model's); quality on
labelled queries (``--min-ndcg-ratio`` with ``--queries``, :mod:`._quality`) judges the model.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import migrate
from .._protocol import VectorStore
from ..exceptions import Advice, Advised, ConfigurationError
from ._embedding import Embedders, other_model
from ._figures import figures
from ._model import AliasState, Member
from ._quality import labelled, measured, quality, ratio_detail
from ._registry import Registry
from ._writes import agree

__all__ = ["Gate", "Gates", "check_gates"]


@dataclass(frozen=True)
class Gates:
    """The bars a switch must clear (each ``None`` turns its gate off)."""

    min_queries: int | None = 100
    min_overlap: float | None = 0.9
    max_p99_ratio: float | None = 1.5
    verify: bool = True
    min_ndcg_ratio: float | None = None
    """The candidate's nDCG@k over the serving store's on :attr:`queries`, at least."""
    queries: str | None = None
    """A JSONL file of labelled queries (``vectorport compare --queries``'s format)."""


@dataclass(frozen=True)
class Gate:
    """One check of a switch."""

    name: str
    ok: bool
    value: Any
    bar: Any
    detail: str

    def to_dict(self) -> dict[str, Any]:
        value = None if isinstance(self.value, float) and math.isnan(self.value) else self.value
        return {"name": self.name, "ok": self.ok, "value": value, "bar": self.bar, "detail": self.detail}


def _shadow_gates(registry: Registry, state: AliasState, member: Member, gates: Gates) -> list[Gate]:
    f = figures(registry.shadow_rows(state.name, member.url))
    informative = other_model(member, state.serving)
    out: list[Gate] = []
    if gates.min_queries is not None:
        out.append(
            Gate(
                "queries",
                f.queries >= gates.min_queries,
                f.queries,
                gates.min_queries,
                f"{f.queries} shadowed queries answered ({f.errors} errors); the gate asks "
                f"{gates.min_queries}",
            )
        )
    if gates.min_overlap is not None:
        ok = informative or (not math.isnan(f.overlap) and f.overlap >= gates.min_overlap)
        out.append(
            Gate(
                "overlap",
                ok,
                f.overlap,
                gates.min_overlap,
                (
                    f"mean overlap@k with the served answers {f.overlap:.3f}"
                    if f.queries
                    else "no shadowed query answered yet: nothing to judge"
                )
                + (
                    f" (another model: information, not a gate of >= {gates.min_overlap})"
                    if informative
                    else f"; the gate asks >= {gates.min_overlap}"
                ),
            )
        )
    if gates.max_p99_ratio is not None:
        ratio = f.p99_ratio
        ok = not math.isnan(ratio) and ratio <= gates.max_p99_ratio
        out.append(
            Gate(
                "p99_ratio",
                ok,
                ratio,
                gates.max_p99_ratio,
                (
                    f"candidate p99 {f.candidate.p99:.2f} ms / serving p99 {f.serving.p99:.2f} ms "
                    f"= {ratio:.2f}"
                    if f.queries
                    else "no shadowed query answered yet: nothing to judge"
                )
                + f"; the gate asks <= {gates.max_p99_ratio}",
            )
        )
    return out


Queued = Callable[[], set[str]]
"""The keys queued for repair on the candidate, read when asked: a difference at such a key is
the repairs gate's (a write the candidate has yet to receive), not the verification's."""


def _verify_gate(serving: VectorStore, candidate: VectorStore, queued: Queued) -> Gate:
    report = migrate.verify(serving, candidate, sample_queries=0, cap=1000)
    suspects = {str(k) for k in [*report.missing, *report.extra]} | {
        str(d.get("key")) for kind in (report.vectors, report.metadata, report.text) for d in kind
    }
    shown = (
        len(report.missing.items)
        + len(report.extra.items)
        + sum(len(kind.items) for kind in (report.vectors, report.metadata, report.text))
    )
    data = report.differences - int(report.count_mismatch) - len(report.collection)
    if data > shown or report.collection:
        return Gate(
            "verify",
            False,
            report.differences,
            0,
            f"the candidate differs from the serving store: {report.missing.total} missing, "
            f"{report.extra.total} extra, {report.vectors.total + report.metadata.total + report.text.total} "
            f"changed{'; ' + '; '.join(report.collection) if report.collection else ''}",
        )
    keys = sorted(suspects)
    still, missing = _still_different(serving, candidate, keys, queued)
    detail = (
        f"digest verification: {report.compared} records compared, equal"
        + (f" ({len(keys)} keys written meanwhile read again: equal)" if keys else "")
        if not still
        else f"the candidate differs from the serving store: {len(still)} records ({missing} missing), "
        f"e.g. {', '.join(still[:3])}"
    )
    return Gate("verify", not still, len(still), 0, detail)


RECHECKS = 5
"""Reads of a key the verification found different before it counts as a difference (a write in
flight between the serving store and the candidate settles within one)."""


def _still_different(
    serving: VectorStore,
    candidate: VectorStore,
    keys: list[str],
    queued: Queued,
    vectors: bool = True,
) -> tuple[list[str], int]:
    """The keys that differ in each of :data:`RECHECKS` reads of both stores, 0.2 s apart, and
    not queued for repair after the last read, and how many of them the candidate lacks
    (``vectors`` false: by text and metadata)."""
    include = ["vector", "metadata", "text"]
    still: list[str] = keys
    truth: dict[str, Any] = {}
    held: dict[str, Any] = {}
    for attempt in range(RECHECKS):
        if not still:
            break
        if attempt:
            time.sleep(0.2)
        truth = {r.key: r for r in serving.get(still, include=include)}
        held = {r.key: r for r in candidate.get(still, include=include)}
        still = [
            k
            for k in still
            if (k in truth) != (k in held) or (k in truth and not agree(truth[k], held[k], vectors))
        ]
    if still:
        waiting = queued()
        still = [k for k in still if k not in waiting]
    missing = sum(1 for k in still if k in truth and k not in held)
    return still, missing


def check_gates(
    registry: Registry,
    state: AliasState,
    member: Member,
    stores: tuple[VectorStore, VectorStore],
    gates: Gates,
) -> list[Gate]:
    """Every gate of switching ``state`` to ``member`` (``stores``: serving, member)."""
    out = _shadow_gates(registry, state, member, gates)

    def queued() -> set[str]:
        return {r.key for r in registry.repairs(state.name, 100_000) if r.member == member.url}

    check = _text_gate if other_model(member, state.serving) else _verify_gate
    verify = check(*stores, queued) if gates.verify else None
    pending = len(queued())
    out.append(Gate("repairs", pending == 0, pending, 0, f"{pending} repairs pending for the candidate"))
    out.append(
        Gate(
            "backfill",
            member.backfilled,
            member.backfilled,
            True,
            "backfill done" if member.backfilled else "the backfill has not finished",
        )
    )
    if gates.min_ndcg_ratio is not None:
        out.append(_quality_gate(registry, state, member, stores, gates))
    if verify is not None:
        out.append(verify)
    return out


def _quality_gate(
    registry: Registry,
    state: AliasState,
    member: Member,
    stores: tuple[VectorStore, VectorStore],
    gates: Gates,
) -> Gate:
    """The candidate's quality on labelled queries against the serving store's (recorded, as
    ``status --queries`` records its own)."""
    if gates.queries is None:
        raise ConfigurationError(
            Advised.of(
                "{} needs {} (labelled queries)", Advice("min_ndcg_ratio"), Advice("queries", "Q.jsonl")
            )
        )
    queries = labelled(gates.queries)
    embedders = Embedders()
    serving = quality(stores[0], state.serving, queries, embedders)
    candidate = quality(stores[1], member, queries, embedders)
    registry.add_quality(state.name, measured(state, {state.serving.label: serving, member.label: candidate}))
    models = (str(member.embedding_model), str(state.serving.embedding_model))
    ratio, detail = ratio_detail(candidate, serving, models)
    bar = gates.min_ndcg_ratio
    return Gate(
        "ndcg_ratio", bar is not None and ratio >= bar, ratio, bar, f"{detail}; the gate asks >= {bar}"
    )


def _keys(store: VectorStore) -> set[str]:
    return {r.key for page in store.scan(include=[]) for r in page.records}


def _text_gate(serving: VectorStore, candidate: VectorStore, queued: Queued) -> Gate:
    """The data check of a candidate of another model: every key of either store, by text and
    metadata, read again while it differs (:func:`_still_different`)."""
    keys = sorted(_keys(serving) | _keys(candidate))
    still, missing = _still_different(serving, candidate, keys, queued, vectors=False)
    detail = (
        f"{len(keys)} records compared by text and metadata (another model's vectors), equal"
        if not still
        else f"the candidate differs from the serving store: {len(still)} records ({missing} missing), "
        f"e.g. {', '.join(still[:3])}"
    )
    return Gate("verify", not still, len(still), 0, detail)
