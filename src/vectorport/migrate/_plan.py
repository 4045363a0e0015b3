"""The plan: everything a migration will do and everything it cannot, found before the first write.

One pass over the source's metadata and text (no vectors) against the target's declared
capabilities: dimension and metric compatibility, record keys the target rejects, every metadata
value the target cannot hold (grouped by problem, with record keys and paths), and what the
chosen :class:`~vectorport.migrate.MetadataPolicy` will transform.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .._features import SupportsLayoutCheck, integrity_check_of, key_check_of, layout_check_of
from .._models import JSON, CollectionSpec, Record
from .._report import DEFAULT_CAP, Capped
from .._validate import key_problem
from ..engine._endpoints import Endpoint
from ..engine._names import TargetName
from ..engine._progress import Progress, ProgressMode
from ..engine._transform import NO_TEXT, MetadataPolicy, Transformed, Transformer, problem_kind
from ..exceptions import Advice, Advised, UnsupportedError
from ._reembed import ReembedEstimate, same_vectors

__all__ = ["MigrationPlan", "PlanChecker", "PlanRefusedError", "ProblemGroup", "build_plan"]

_POLICY_EFFECT = {
    MetadataPolicy.FLATTEN: "nested objects become dotted keys, other values JSON strings",
    MetadataPolicy.STRINGIFY: "values become their JSON text",
    MetadataPolicy.DROP: "those keys are removed",
}


@dataclass
class ProblemGroup:
    """Occurrences of one kind of problem (or change): how many, in how many records, and where."""

    kind: str
    message: str
    """The first occurrence's full message (or the action taken)."""
    records: int = 0
    occurrences: Capped[dict[str, str]] = field(default_factory=Capped)
    """``{"key": record key, "path": "metadata.a.b", "message": …}`` per occurrence (capped)."""

    def to_dict(self) -> dict[str, JSON]:
        return {
            "kind": self.kind,
            "message": self.message,
            "records": self.records,
            "occurrences": self.occurrences.to_dict(),
        }


def _add(
    groups: dict[str, ProblemGroup],
    name: str,
    key: str,
    items: list[tuple[str, str]],
    cap: int,
) -> None:
    """Add one record's ``(path, message)`` items to the group ``name``."""
    group = groups.get(name)
    if group is None:
        group = groups[name] = ProblemGroup(name, items[0][1], occurrences=Capped(cap))
    group.records += 1
    for path, message in items:
        group.occurrences.add({"key": key, "path": path, "message": message})


def _layout_kind(message: str) -> str:
    if "non-filterable" in message:  # the text key counts as filterable metadata in this index
        return "layout: text in filterable metadata"
    return "layout: " + problem_kind(message)


def _add_layout(groups: dict[str, ProblemGroup], key: str, found: list[tuple[str, str]], cap: int) -> None:
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for path, message in found:
        by_kind.setdefault(_layout_kind(message), []).append((path, message))
    for kind, items in by_kind.items():
        _add(groups, kind, key, items, cap)


def _layout_problems(
    check: SupportsLayoutCheck | None, key: str, metadata: dict[str, JSON], text: str | None
) -> list[tuple[str, str]]:
    return check.layout_problems(key, metadata, text) if check is not None else []


def _grouped(
    groups: dict[str, ProblemGroup], key: str, items: list[tuple[str, str]], kind_of: str, cap: int
) -> None:
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for path, message in items:
        by_kind.setdefault(kind_of if kind_of else problem_kind(message), []).append((path, message))
    for kind, found in by_kind.items():
        _add(groups, kind, key, found, cap)


@dataclass
class MigrationPlan:
    """What a migration will do, and whether it may run (:attr:`refused`).

    Built by :func:`vectorport.migrate.plan` (and at the start of every migration) without
    writing anything. ``to_dict()`` is its JSON form; :meth:`reasons` lists why it is refused
    and :meth:`suggestion` which flag to pass.
    """

    source: str
    target: str
    source_backend: str
    target_backend: str
    shard: tuple[int, int]
    source_spec: CollectionSpec
    target_spec: CollectionSpec
    """The target collection's spec: existing, or as it will be created."""
    target_exists: bool
    target_count: int | None
    policy: MetadataPolicy
    text_key: str | None
    reembed: str | None
    records: int = 0
    """Records in the source (in this shard)."""
    incompatible: list[str] = field(default_factory=list)
    """Spec problems no flag fixes (metric, dimension, embedding model)."""
    target_name: TargetName | None = None
    """How the target collection's name was chosen when the target URL named none or an
    invalid one (then the plan is refused and names a valid one)."""
    key_problems: ProblemGroup | None = None
    """Record keys the target rejects."""
    no_text: ProblemGroup | None = None
    """Re-embedding: the records that have no text to embed (by key)."""
    metadata_problems: dict[str, ProblemGroup] = field(default_factory=dict)
    """Every value the target cannot hold, by kind of problem (before any policy)."""
    transforms: dict[str, ProblemGroup] = field(default_factory=dict)
    """What the policy (and ``text_key``) will change, by ``"<action>: <kind>"``."""
    unresolved: dict[str, ProblemGroup] = field(default_factory=dict)
    """Problems the chosen policy leaves: records that cannot be written."""
    records_with_problems: int = 0
    records_transformed: int = 0
    records_unresolved: int = 0
    policy_outcomes: dict[str, int] = field(default_factory=dict)
    """For each non-default policy: how many records it would still leave unwritable."""
    notes: list[str] = field(default_factory=list)
    reembed_estimate: ReembedEstimate | None = None
    """Re-embedding: the texts and tokens the model will be sent, and the estimated cost."""

    @property
    def refused(self) -> bool:
        """The migration must not run: nothing will be written."""
        name_refused = self.target_name is not None and self.target_name.refused
        problems = self.key_problems or self.no_text or self.records_unresolved
        return bool(name_refused or self.incompatible or problems)

    @property
    def lossy(self) -> bool:
        """Some metadata will not arrive as it is in the source."""
        return self.records_with_problems > 0

    def reasons(self) -> list[str]:
        """One line per reason the plan is refused."""
        name = self.target_name.reason() if self.target_name is not None else None
        out = ([name] if name else []) + list(self.incompatible)
        if self.key_problems:
            out.append(
                f"{self.key_problems.records} record keys are rejected by {self.target_backend} "
                f"({self.key_problems.message}); rename them in the source"
            )
        if self.no_text:
            keys = ", ".join(repr(o["key"]) for o in self.no_text.occurrences.items[:5])
            more = " ..." if self.no_text.records > 5 else ""
            out.append(
                f"{self.no_text.records} records have no text to re-embed with {self.reembed}: {keys}{more}"
            )
        if self.records_unresolved:
            kinds = ", ".join(f"{g.kind} ({g.records} records)" for g in self.unresolved.values())
            out.append(
                Advised.of(
                    "{} records hold metadata {} cannot hold under {}: {}",
                    self.records_unresolved,
                    self.target_backend,
                    Advice("metadata_policy", self.policy),
                    kinds,
                )
            )
        return out

    def suggestion(self) -> str | None:
        """Which flag to pass (or name to use) to make a refused plan run, when one exists."""
        if self.incompatible or self.key_problems:
            return None
        if self.no_text:
            return (
                "give those records their text in the source (or name the metadata key holding it with "
                "text_key), or migrate without reembed"
            )
        hint = self._policy_suggestion()
        if self.target_name is None or not self.target_name.refused:
            return hint
        rename = f"name the target collection {self.target_name.name!r} in the target URL"
        return Advised.of("{}, and {}", rename, hint) if hint else rename

    def _policy_suggestion(self) -> str | None:
        if not self.records_unresolved:
            return None
        fixes = [p for p, left in self.policy_outcomes.items() if left == 0]
        if not fixes:
            return (
                "no metadata_policy makes every record fit; change these records in the source "
                "(they are listed under 'unresolved')"
            )
        first = MetadataPolicy(fixes[0])
        others = f" (or {', '.join(fixes[1:])})" if len(fixes) > 1 else ""
        return Advised.of("pass {}{}: {}", Advice("metadata_policy", first), others, _POLICY_EFFECT[first])

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready dict."""
        return {
            "source": self.source,
            "target": self.target,
            "source_backend": self.source_backend,
            "target_backend": self.target_backend,
            "shard": list(self.shard),
            "source_spec": self.source_spec.to_dict(),
            "target_spec": self.target_spec.to_dict(),
            "target_exists": self.target_exists,
            "target_count": self.target_count,
            "records": self.records,
            "metadata_policy": self.policy.value,
            "text_key": self.text_key,
            "reembed": self.reembed,
            "reembed_estimate": self.reembed_estimate.to_dict() if self.reembed_estimate else None,
            "refused": self.refused,
            "lossy": self.lossy,
            "reasons": self.reasons(),
            "suggestion": self.suggestion(),
            "incompatible": list(self.incompatible),
            "target_name": self.target_name.to_dict() if self.target_name else None,
            "key_problems": self.key_problems.to_dict() if self.key_problems else None,
            "no_text": self.no_text.to_dict() if self.no_text else None,
            "records_with_problems": self.records_with_problems,
            "records_transformed": self.records_transformed,
            "records_unresolved": self.records_unresolved,
            "metadata_problems": [g.to_dict() for g in self.metadata_problems.values()],
            "transforms": [g.to_dict() for g in self.transforms.values()],
            "unresolved": [g.to_dict() for g in self.unresolved.values()],
            "policy_outcomes": dict(self.policy_outcomes),
            "notes": list(self.notes),
        }


class PlanRefusedError(UnsupportedError):
    """The migration plan was refused; nothing was written. ``plan`` says why, ``report`` is the
    full :class:`~vectorport.migrate.MigrationReport`."""

    def __init__(self, plan: MigrationPlan, report: object = None) -> None:
        self.plan = plan
        self.report = report
        lines = plan.reasons()
        hint = plan.suggestion()
        text = "; ".join(lines) + (f". To proceed, {hint}" if hint else "")
        super().__init__(f"migration plan refused, nothing was written: {text}")


def planned_target_spec(
    source_spec: CollectionSpec, target: Endpoint, dimension: int | None, model: str | None
) -> CollectionSpec:
    """The target's spec: the existing one, or the one it will be created with."""
    if target.exists:
        return target.store.spec
    name = getattr(target.store, "collection", None) or source_spec.name
    return CollectionSpec(
        str(name),
        dimension or source_spec.dimension,
        source_spec.metric,
        model or source_spec.embedding_model,
    )


def target_conflicts(
    src: CollectionSpec,
    existing: CollectionSpec,
    reembed_dim: int | None,
    reembed_model: str | None,
    verb: str,
) -> list[str]:
    """Why an existing target cannot take these vectors: another dimension, metric or embedding
    model (two models in one collection: its queries would compare vectors of different
    spaces). ``verb`` names the command in the advice (``migrate``, ``sync``)."""
    out: list[str] = []
    want_dim = reembed_dim or src.dimension
    if existing.dimension != want_dim:
        out.append(
            f"the target collection {existing.name!r} has {existing.dimension} dimensions; the "
            f"{'re-embedded' if reembed_dim else 'source'} vectors have {want_dim}: "
            f"{verb} into a new collection"
        )
    if existing.metric is not src.metric:
        out.append(
            f"the target collection {existing.name!r} uses the {existing.metric.value} metric; the "
            f"source uses {src.metric.value}: {verb} into a new collection"
        )
    want_model = reembed_model or src.embedding_model
    if want_model and existing.embedding_model and not same_vectors(want_model, existing.embedding_model):
        out.append(
            f"the target collection {existing.name!r} holds vectors from {existing.embedding_model!r}; "
            f"these are from {want_model!r}: {verb} into a new collection (an alias moves an app "
            "to it: docs/reembed.md)"
        )
    return out


def _compatibility(
    src: CollectionSpec,
    planned: CollectionSpec,
    target: Endpoint,
    reembed_dim: int | None,
    reembed_model: str | None,
) -> list[str]:
    caps = target.capabilities
    backend = target.store.name
    out: list[str] = []
    want_dim = reembed_dim or src.dimension
    if target.exists:
        return target_conflicts(src, planned, reembed_dim, reembed_model, "migrate")
    if src.metric not in caps.metrics:
        names = ", ".join(sorted(m.value for m in caps.metrics))
        out.append(
            f"{backend} has no {src.metric.value} metric (it supports {names}); a {src.metric.value} "
            f"collection cannot move there without changing its ranking"
        )
    if want_dim > caps.max_dimension:
        out.append(
            f"{backend} holds at most {caps.max_dimension} dimensions; these vectors have {want_dim}"
            + (" (see docs/backends/pgvector.md for halfvec)" if backend == "pgvector" else "")
        )
    return out


def build_plan(
    source: Endpoint,
    target: Endpoint,
    transformer: Transformer,
    *,
    shard: tuple[int, int] = (0, 1),
    reembed: str | None = None,
    reembed_dimension: int | None = None,
    estimate: ReembedEstimate | None = None,
    cap: int = DEFAULT_CAP,
    progress: ProgressMode | bool = False,
    total_hint: int | None = None,
    scan: bool = True,
) -> MigrationPlan:
    """Scan the source's metadata and text (no vectors) and plan the migration. Writes nothing.

    ``scan=False``: only the checks that need no record (names, dimension, metric, model); the
    records are then checked by a :class:`PlanChecker` as a single-pass copy streams them.
    ``estimate``: a re-embedding's, filled with the texts the model will be sent.

    A source that carries its own digests (a snapshot, :class:`SupportsIntegrityCheck`) is
    checked against them first, whole, so a damaged or edited one is refused before any write."""
    proof = integrity_check_of(source.store)
    if proof is not None:
        proof.check_integrity()
    src_spec = source.store.spec
    planned = planned_target_spec(src_spec, target, reembed_dimension, reembed)
    plan = MigrationPlan(
        source=source.label,
        target=target.label,
        source_backend=source.store.name,
        target_backend=target.store.name,
        shard=shard,
        source_spec=src_spec,
        target_spec=planned,
        target_exists=target.exists,
        target_count=target.store.count() if target.exists else None,
        policy=transformer.policy,
        text_key=transformer.text_key,
        reembed=reembed,
        incompatible=_compatibility(src_spec, planned, target, reembed_dimension, reembed),
        target_name=target.naming,
        reembed_estimate=estimate,
    )
    _follow_text_language(source, target, plan)
    _notes(source, target, plan)
    if scan:
        checker = PlanChecker(plan, target, transformer, cap)
        with Progress("plan", total_hint, enabled=progress) as bar:
            for page in source.store.scan(include=["metadata", "text"], segment=shard):
                checker.observe(page)
                bar.advance(len(page))
        checker.finish()
    if estimate is not None and estimate.resumed:
        _count_left(source, transformer, shard, estimate)
    return plan


def _count_left(
    source: Endpoint, transformer: Transformer, shard: tuple[int, int], est: ReembedEstimate
) -> None:
    """A resumed re-embedding's estimate: the texts past the checkpoint's cursor (what the copy
    reads on); none when the interrupted run acknowledged every record."""
    if est.after is None:
        return
    for page in source.store.scan(include=["metadata", "text"], segment=shard, cursor=est.after):
        texts = [transformer.apply(rec.metadata, rec.text).text for rec in page]
        est.add([t for t in texts if t is not None])


def _notes(source: Endpoint, target: Endpoint, plan: MigrationPlan) -> None:
    """What the plan says before any record is read: columns left out, the target's name, the
    records an existing target already holds."""
    left_out = getattr(source.store, "left_out_columns", ())
    if left_out:
        plan.notes.append(
            f"the source's columns {', '.join(left_out)} are carried by no record field (a record "
            "holds a key, a vector, JSON metadata and a text): they are not copied"
        )
    name_note = target.naming.note() if target.naming is not None else None
    if name_note:
        plan.notes.append(name_note)
    if plan.target_count:
        plan.notes.append(
            f"the target already holds {plan.target_count} records: records with the same key are "
            "replaced, others are left alone (verification reports them as extra)"
        )


def _follow_text_language(source: Endpoint, target: Endpoint, plan: MigrationPlan) -> None:
    """A target created by the migration searches text in the source's language (a Spanish
    table's copy is not stemmed as English), where both stores have one (``text_language``);
    where it will not (a language named on the target, one it has no analyzer for), the plan
    says what it does instead. A target that cannot refuses here, before any write."""
    language = getattr(source.store, "text_language", None)
    follow = getattr(target.store, "follow_text_language", None)
    if not isinstance(language, str) or target.exists or not callable(follow):
        return
    outcome = follow(language)
    if outcome is True:
        plan.notes.append(
            f"the target is created with full-text search in the source's language, {language!r}"
        )
    elif isinstance(outcome, str):
        plan.notes.append(outcome)


class PlanChecker:
    """The plan's per-record checks, fed pages: by :func:`build_plan`'s own pass over the
    source, or by a single-pass copy as the records stream through it (then :attr:`plan`
    becomes :attr:`~MigrationPlan.refused` at the first record the target cannot take)."""

    def __init__(self, plan: MigrationPlan, target: Endpoint, transformer: Transformer, cap: int) -> None:
        self.plan = plan
        self.transformer = transformer
        self.cap = cap
        self.alternatives = [
            Transformer(transformer.rules, p, transformer.text_key)
            for p in (MetadataPolicy.FLATTEN, MetadataPolicy.STRINGIFY, MetadataPolicy.DROP)
        ]
        plan.policy_outcomes = {t.policy.value: 0 for t in self.alternatives}
        self.max_key = target.capabilities.max_key_bytes
        # what the target's layout adds to its capabilities' limits, checked on each record as
        # the policy leaves it (a record already unwritable is not checked again)
        self.layout_check = layout_check_of(target.store)
        # keys another collection of a shared table holds (read from the target, page by page)
        self.key_check = key_check_of(target.store)

    def observe(self, records: Iterable[Record]) -> list[Transformed]:
        """Check each record; return what the policy makes of each (the copy writes that)."""
        page = list(records)
        if self.key_check is not None and page:
            for key in self.key_check.taken_keys([rec.key for rec in page]):
                self._key_problem(key, "belongs to another collection of this shared table")
        outs = [self._record(rec) for rec in page]
        estimate = self.plan.reembed_estimate
        if estimate is not None and not estimate.resumed:  # a resumed run's: _count_left
            estimate.add([o.text for o in outs if o.text is not None])
        return outs

    def _key_problem(self, key: str, why: str) -> None:
        plan = self.plan
        if plan.key_problems is None:
            plan.key_problems = ProblemGroup("rejected key", why, occurrences=Capped(self.cap))
        plan.key_problems.records += 1
        plan.key_problems.occurrences.add({"key": key, "path": "key", "message": why})

    def _no_text(self, key: str) -> None:
        plan = self.plan
        if plan.no_text is None:
            plan.no_text = ProblemGroup("no text", NO_TEXT, occurrences=Capped(self.cap))
        plan.no_text.records += 1
        plan.no_text.occurrences.add({"key": key, "path": "text", "message": NO_TEXT})

    def _record(self, rec: Record) -> Transformed:
        plan, cap, layout_check = self.plan, self.cap, self.layout_check
        plan.records += 1
        why = key_problem(rec.key, self.max_key)
        if why:
            self._key_problem(rec.key, why)
        out = self.transformer.apply(rec.metadata, rec.text)
        if plan.reembed and out.text is None:
            self._no_text(rec.key)
        layout = [] if out.unresolved else _layout_problems(layout_check, rec.key, out.metadata, out.text)
        if out.problems or layout:
            plan.records_with_problems += 1
            _grouped(plan.metadata_problems, rec.key, out.problems, "", cap)
            _add_layout(plan.metadata_problems, rec.key, layout, cap)
            for alt in self.alternatives:
                alt_out = alt.apply(rec.metadata, rec.text)
                if alt_out.unresolved or _layout_problems(
                    layout_check, rec.key, alt_out.metadata, alt_out.text
                ):
                    plan.policy_outcomes[alt.policy.value] += 1
        if out.changes:
            plan.records_transformed += 1
            by_kind: dict[str, list[tuple[str, str]]] = {}
            for change in out.changes:
                by_kind.setdefault(f"{change.action}: {change.kind}", []).append((change.path, change.action))
            for name, items in by_kind.items():
                _add(plan.transforms, name, rec.key, items, cap)
        if out.unresolved or layout:
            plan.records_unresolved += 1
            _grouped(plan.unresolved, rec.key, out.unresolved, "", cap)
            _add_layout(plan.unresolved, rec.key, layout, cap)
        return out

    def finish(self) -> None:
        """Notes that need every record seen."""
        plan = self.plan
        if plan.records_with_problems and self.transformer.policy is not MetadataPolicy.ERROR:
            plan.notes.append(
                Advised.of(
                    "{} records hold metadata {} cannot hold; {} transforms it (see 'transforms')",
                    plan.records_with_problems,
                    plan.target_backend,
                    Advice("metadata_policy", self.transformer.policy),
                )
            )
