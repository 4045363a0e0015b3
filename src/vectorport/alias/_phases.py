"""The operator's calls: each moves an alias one phase on in one registry transaction and returns
an :class:`~._report.AliasReport`; ``vectorport alias …`` runs the same calls.

=================  ==================================================================
``create``         a new alias serving one store
``shadow``         a candidate joins: dual-written (or fed by ``sync --follow``),
                   backfilled, and shadowing a sample of the reads
``switch``         the candidate serves, when every gate holds (else refused, exit 4);
                   the store it replaces keeps receiving every write
``rollback``       the previous store serves again, at once, with every write
``retire``         a member leaves the alias (its data stays where it is)
``status``         phase, members, shadow figures, repairs
=================  ==================================================================
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from .._embedder import Embedder
from .._exit import Status
from .._protocol import VectorStore
from .._registry import connect
from ..compare._metrics import Relevance
from ..exceptions import Advised, Call, ConfigurationError
from ..ingest.embedders import resolve_embedder
from ..sync._lease import take_back
from ._backfill import SETTLE, BackfillStats, Copy, backfill, copy_with_migrate, copy_with_sync
from ._embedding import Embedders, other_model
from ._figures import by_shape, figures
from ._follower import STOPPED, followers, stray, sync_state, wait_caught_up, wait_stopped
from ._gates import Gates, check_gates
from ._model import AliasState, Feed, Member, Phase, Role
from ._quality import labelled, measured, quality
from ._registry import Registry
from ._report import AliasReport
from ._routing import CHECK_INTERVAL

__all__ = ["create", "retire", "rollback", "shadow", "status", "switch"]


@contextlib.contextmanager
def _registry(location: str | None) -> Iterator[Registry]:
    registry = Registry(location)
    try:
        yield registry
    finally:
        registry.close()


@contextlib.contextmanager
def _opened(*urls: str) -> Iterator[list[VectorStore]]:
    stores: list[VectorStore] = []
    try:
        for url in urls:
            stores.append(connect(url))
        yield stores
    finally:
        for store in stores:
            store.close()


def _report(registry: Registry, action: str, state: AliasState, started: float) -> AliasReport:
    return AliasReport(action, state, registry.label, seconds=time.monotonic() - started)


def create(name: str, serve: str, *, registry: str | None = None, sample: float = 1.0) -> AliasReport:
    """A new alias ``name`` serving the store at ``serve`` (which must exist).

    >>> import tempfile, vectorport
    >>> from vectorport import alias
    >>> reg = tempfile.mkdtemp() + "/aliases.sqlite"
    >>> _ = vectorport.connect("memory://doctest-alias", dimension=2)
    >>> alias.create("docs", "memory://doctest-alias", registry=reg).state.phase
    <Phase.SERVING: 'serving'>
    """
    started = time.monotonic()
    if not 0.0 <= sample <= 1.0:
        raise ConfigurationError(f"sample must be between 0 and 1, got {sample}")
    with _registry(registry) as reg, _opened(serve) as (store,):
        member = Member(serve, Role.SERVING, embedding_model=store.spec.embedding_model)
        state = AliasState(name, Phase.SERVING, 1, sample, (member,))
        reg.create(state, f"created, serving {member.label}")
        return _report(reg, "create", state, started)


def shadow(
    name: str,
    candidate: str,
    *,
    registry: str | None = None,
    feed: Feed | str = Feed.DUAL_WRITE,
    sample: float | None = None,
    copy: Copy = copy_with_migrate,
    settle: float = SETTLE,
    model: str | None = None,
) -> AliasReport:
    """Add ``candidate`` (created with the serving store's dimension and metric when missing):
    from the next version every process writes it after the serving store (``dual-write``; with
    ``capture`` it is left to ``vectorport sync --follow``) and shadows a ``sample`` of the reads;
    with ``dual-write`` it is then backfilled (:mod:`._backfill`). Returns after the backfill.

    ``model``: the candidate's embedding model (an embedder spec, e.g. ``hash:64``) when it is
    another than the serving store's: the candidate is created with its dimension, backfilled by
    ``migrate --reembed`` and every written text is embedded again by it (:mod:`._embedding`)."""
    started = time.monotonic()
    how = Feed(feed)
    if model is not None and how is Feed.CAPTURE:
        raise ConfigurationError("a candidate of another model is fed by dual-write (the alias embeds it)")
    with _registry(registry) as reg:
        state = reg.require(name)
        if state.phase is not Phase.SERVING:
            raise ConfigurationError(
                f"alias {name!r} is in phase {state.phase.value}: a candidate joins an alias that serves "
                "one store (retire or switch first)"
            )
        with _opened(state.serving.url) as (serving,):
            spec = serving.spec
            embedder = None if model is None else resolve_embedder(model)
            target = connect(
                candidate,
                dimension=spec.dimension if embedder is None else embedder.dimension,
                metric=spec.metric,
                embedding_model=spec.embedding_model if embedder is None else embedder.model_id,
            )
            try:
                recorded = target.spec.embedding_model if embedder is None else embedder.model_id
                member = Member(candidate, Role.CANDIDATE, how, recorded, backfilled=how is Feed.CAPTURE)
                reg.clear_writes(name)
                reg.drop_repairs(name, candidate)
                if how is Feed.CAPTURE:  # a follower may feed it (again)
                    take_back(sync_state(state.serving, member))
                reg.clear_shadow(name, candidate)
                after = state.with_members(Phase.SHADOW, (*state.members, member))
                if sample is not None:
                    after = AliasState(after.name, after.phase, after.version, sample, after.members)
                reg.change(state, after, f"{member.label} shadows ({how.value})")
                report = _report(reg, "shadow", after, started)
                if how is Feed.DUAL_WRITE:
                    other = embedder if other_model(member, state.serving) else None
                    report.backfill = _backfilled(reg, name, (serving, target), copy, settle, other)
                    report.state = _mark_backfilled(reg, name, candidate)
            finally:
                target.close()
    report.seconds = time.monotonic() - started
    return report


def _backfilled(
    reg: Registry,
    name: str,
    stores: tuple[VectorStore, VectorStore],
    copy: Copy,
    settle: float,
    embedder: Embedder | None,
) -> BackfillStats:
    """The backfill; when it fails (a plan refused, a store down) the candidate leaves the alias
    again, so the app's writes stop going to a store that will not be switched to."""
    try:
        return backfill(reg, name, *stores, copy=copy, settle=settle, embedder=embedder)
    except BaseException:
        state = reg.require(name)
        url = stores[1].url.raw
        if any(m.url == url for m in state.members):
            members = tuple(m for m in state.members if m.url != url)
            reg.change(
                state, state.with_members(Phase.SERVING, members), "backfill failed: candidate removed"
            )
        raise


def _mark_backfilled(reg: Registry, name: str, url: str) -> AliasState:
    state = reg.require(name)
    members = tuple(
        Member(m.url, m.role, m.feed, m.embedding_model, True) if m.url == url else m for m in state.members
    )
    after = state.with_members(state.phase, members)
    reg.change(state, after, "backfill done")
    reg.clear_writes(name)
    return after


def _wait_for_processes() -> None:
    # every process reads the new version by its first call after the routing bound: the call
    # returns once that holds
    time.sleep(CHECK_INTERVAL)


def switch(name: str, *, registry: str | None = None, gates: Gates | None = None) -> AliasReport:
    """Make the candidate serve when every gate holds (:mod:`._gates`); else a report with status
    ``refused`` naming each failed gate, and nothing changed. The store that served stays a
    member (``previous``) receiving every write, so :func:`rollback` is instant. A capture-fed
    candidate is first taken over from its follower (:mod:`._follower`)."""
    started = time.monotonic()
    with _registry(registry) as reg:
        state = reg.require(name)
        candidates = [m for m in state.members if m.role is Role.CANDIDATE]
        if state.phase is not Phase.SHADOW or not candidates:
            raise ConfigurationError(
                Advised.of(
                    "alias {!r} is in phase {}: switch needs a shadowing candidate (`{}`)",
                    name,
                    state.phase.value,
                    Call("alias shadow", (name, "URL")),
                )
            )
        member = candidates[0]
        report = _report(reg, "switch", state, started)
        with _opened(state.serving.url, member.url) as (serving, target):
            if member.feed is Feed.CAPTURE:
                state = _take_over(reg, report, member, (serving, target))
                if report.status is Status.REFUSED:
                    return report
                member = state.member(member.url)
            report.state = state
            report.gates += check_gates(reg, state, member, (serving, target), gates or Gates())
        failed = [g for g in report.gates if not g.ok]
        if failed:
            report.status = Status.REFUSED
            report.reasons = [f"{g.name}: {g.detail}" for g in failed]
            return report
        members = tuple(_swapped(m, member.url) for m in state.members)
        report.state = state.with_members(Phase.SWITCHED, members)
        reg.change(state, report.state, f"switched to {member.label}")
    _wait_for_processes()
    report.seconds = time.monotonic() - started
    return report


def _take_over(
    reg: Registry, report: AliasReport, member: Member, stores: tuple[VectorStore, VectorStore]
) -> AliasState:
    """A capture-fed candidate becomes dual-written before it may serve: once its follower is
    caught up, the alias writes it (logging the keys) from the next version on, the follower
    stops by itself (:mod:`._follower`), then one ``sync`` pass applies what the follower had
    not, and the keys written meanwhile are copied again (:mod:`._backfill`). Refused (the
    report's status), the alias as it was, when the follower does not catch up or stop in time;
    when the catch-up fails (or is interrupted) the candidate is fed by capture again and the
    error raised, so a later switch takes it over again instead of finding it half backfilled."""
    state = report.state
    gate, lease = wait_caught_up(state, member, stores=stores)
    report.gates.append(gate)
    if not gate.ok:
        report.status, report.reasons = Status.REFUSED, [f"{gate.name}: {gate.detail}"]
        return state
    fed = tuple(
        Member(m.url, m.role, Feed.DUAL_WRITE, m.embedding_model, False) if m.url == member.url else m
        for m in state.members
    )
    after = state.with_members(state.phase, fed)
    reg.clear_writes(state.name)
    reg.change(state, after, f"{member.label} dual-written (was fed by capture)")
    try:
        lease = wait_stopped(after, member, f"alias {state.name} (switch)")
        if lease is not None and lease.running:
            _capture_again(reg, state, member, "follower did not stop: capture again")
            report.status = Status.REFUSED
            report.reasons = [
                f"follower: asked to stop, the follower ({lease.describe()}) still runs after "
                f"{STOPPED:.0f} s; run switch again once it has exited"
            ]
            return reg.require(state.name)
        if lease is not None:
            report.notes.append(
                f"the follower {lease.describe()}; the alias writes {member.label} itself now: "
                "do not start it again (`sync --follow` of these two stores is refused from now on)"
            )
        copy = copy_with_sync(state.serving.url, member.url)
        report.backfill = backfill(reg, state.name, *stores, copy=copy)
    except BaseException:
        _capture_again(reg, state, member, "catch-up failed: capture again (restart the follower)")
        raise
    return _mark_backfilled(reg, state.name, member.url)


def _capture_again(reg: Registry, before: AliasState, member: Member, why: str) -> None:
    """Give a candidate the switch took over back to capture (as ``before`` had it): a follower
    may run on its sync state again, and nothing the follower has not applied is lost (the
    source's capture keeps it)."""
    take_back(sync_state(before.serving, member))
    now = reg.require(before.name)
    reg.change(now, now.with_members(now.phase, before.members), why)


def _swapped(m: Member, new: str) -> Member:
    if m.url == new:
        return Member(m.url, Role.SERVING, Feed.DUAL_WRITE, m.embedding_model, True)
    if m.role is Role.SERVING:
        return Member(m.url, Role.PREVIOUS, Feed.DUAL_WRITE, m.embedding_model, True)
    return m


def rollback(name: str, *, registry: str | None = None) -> AliasReport:
    """Serve the previous store again, at once (it received every write since the switch); the
    store it replaces shadows again as the candidate, so a later :func:`switch` needs no backfill."""
    started = time.monotonic()
    with _registry(registry) as reg:
        state = reg.require(name)
        previous = [m for m in state.members if m.role is Role.PREVIOUS]
        if state.phase is not Phase.SWITCHED or not previous:
            raise ConfigurationError(f"alias {name!r} is in phase {state.phase.value}: nothing to roll back")
        old = previous[0]
        members = tuple(
            Member(m.url, Role.CANDIDATE, Feed.DUAL_WRITE, m.embedding_model, True)
            if m.role is Role.SERVING
            else Member(m.url, Role.SERVING, Feed.DUAL_WRITE, m.embedding_model, True)
            if m.url == old.url
            else m
            for m in state.members
        )
        after = state.with_members(Phase.SHADOW, members)
        reg.change(state, after, f"rolled back to {old.label}")
        report = _report(reg, "rollback", after, started)
    _wait_for_processes()
    report.seconds = time.monotonic() - started
    return report


def retire(name: str, url: str, *, registry: str | None = None) -> AliasReport:
    """``url`` leaves the alias: no more writes or shadow reads reach it (its data is left as
    is: drop it by its own URL when you are sure). The serving store cannot be retired."""
    started = time.monotonic()
    with _registry(registry) as reg:
        state = reg.require(name)
        leaving = state.member(url)
        if leaving.role is Role.SERVING:
            raise ConfigurationError(
                f"{leaving.label} serves alias {name!r}: switch to another member before retiring it"
            )
        members = tuple(m for m in state.members if m.url != url)
        phase = Phase.SERVING if len(members) == 1 else state.phase
        after = state.with_members(phase, members)
        reg.change(state, after, f"retired {leaving.label}")
        reg.drop_repairs(name, url)
        report = _report(reg, "retire", after, started)
    _wait_for_processes()
    report.seconds = time.monotonic() - started
    return report


def status(name: str, *, registry: str | None = None, queries: str | None = None) -> AliasReport:
    """The alias now: phase, members, shadow figures per member and filter shape, repairs
    pending, counters (dropped shadow reads, member errors) and the phase history; with
    ``queries`` (labelled, JSONL) each member's nDCG@k, MRR and hit@k in its own model. Status
    ``findings`` when repairs are pending or a member failed shadowed queries."""
    started = time.monotonic()
    with _registry(registry) as reg:
        state = reg.require(name)
        report = _report(reg, "status", state, started)
        if queries is not None:
            report.quality = _quality(state, queries)
            reg.add_quality(name, measured(state, report.quality))
        report.quality_recorded = reg.quality(name)
        for member in state.members:
            rows = reg.shadow_rows(name, member.url)
            if member.role is Role.SERVING and not rows:
                continue  # the serving store shadowed nothing (it shadowed before a switch: shown)
            report.rows[member.label] = rows
            report.figures[member.label] = figures(rows)
            report.shapes[member.label] = by_shape(rows)
        report.followers = followers(state)
        report.repairs = reg.repair_count(name)
        report.counters = {
            state.member(u).label if _is_member(state, u) else u: c for u, c in reg.counters(name).items()
        }
        report.events = reg.events(name)
    if report.repairs:
        report.reasons.append(f"{report.repairs} writes wait in the repair queue")
    report.reasons += stray(state)
    report.reasons += [
        f"{url}: {f.errors} shadowed queries failed"
        for url, f in report.figures.items()
        if f.errors and url != state.serving.label  # the serving store's are from before it served
    ]
    report.status = Status.FINDINGS if report.reasons else Status.HEALTHY
    report.seconds = time.monotonic() - started
    return report


def _quality(state: AliasState, path: str) -> dict[str, Relevance]:
    """Each member's quality on the labelled queries of ``path``, in its own model."""
    labelled_queries, embedders = labelled(path), Embedders()
    with _opened(*(m.url for m in state.members)) as stores:
        return {
            m.label: quality(store, m, labelled_queries, embedders)
            for m, store in zip(state.members, stores, strict=True)
        }


def _is_member(state: AliasState, url: str) -> bool:
    return any(m.url == url for m in state.members)
