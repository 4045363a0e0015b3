"""Writes through an alias reach every member: the serving store first (its result is the app's
result), then each dual-write member; a member's failure becomes repair-queue entries, not the
app's error. While a backfill runs, each write's keys are logged before the serving store is
written (the touched-key log, :mod:`._backfill`).

A member of another embedding model than the serving store's (:mod:`._embedding`) is not
written in the app's call: its keys go to the repair queue (reason :data:`REEMBED`), whose
thread embeds their text again with the member's model, in batches, off the request path; a
write of a record without text is refused by name before anything is written.

A repair, like the backfill's re-copy, copies a key's *current* record from the serving store
(the truth: it is written first) to the member, or deletes it there when the serving store no
longer holds it: :func:`recopy` is the one way a member is brought back to the serving store.

A repair never applies an older write over a newer one. The queue's ids are the writes'
sequence: a key whose source (the store the repair copies from) has a *newer* write queued for
it lacks that write, while the target received it (directly, or through its own newer entry), so
the repair leaves the key to that write. The check is made between reading the source and
writing the target, so a write landing around a switch is seen by a repair draining the queue
(a process still routing by the version before the switch included). What it cannot see is a
write that lands entirely between that check and the target's write (milliseconds): records
carry no version a store could compare on write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._embedder import Embedder
from .._json import json_equal
from .._models import Record
from .._protocol import VectorStore
from ..exceptions import TransientError, VectorportError
from ..verify._judge import same_content  # the verifier's rule of equality
from ._embedding import Embedders, other_model, reembedded, require_text
from ._model import Member, Role
from ._registry import Registry, Repair
from ._routing import Routing

__all__ = ["REEMBED", "Op", "agree", "recopy", "repair", "write"]

log = logging.getLogger("vectorport.alias")

_ALL = ("vector", "metadata", "text")
REEMBED = "re-embed: the member embeds with another model"
"""The repair queue's reason for a write a member of another model embeds off the app's call."""
RECOPY_ROUNDS = 10
"""Copies of a key that keeps changing under :func:`recopy` before it gives up (a transient error)."""


@dataclass(frozen=True)
class Op:
    """One app write: records to upsert, or keys to delete."""

    kind: str
    """``upsert`` or ``delete``."""
    records: Sequence[Record] = ()
    keys: Sequence[str] = ()

    @property
    def touched(self) -> list[str]:
        return [r.key for r in self.records] if self.kind == "upsert" else list(self.keys)

    def apply(self, store: VectorStore) -> None:
        if self.kind == "upsert":
            store.upsert(self.records)
        else:
            store.delete(list(self.keys))


def write(registry: Registry, routing: Routing, op: Op) -> None:
    """Apply ``op`` to the serving store (errors are the app's), then to every dual-write member
    (errors queue repairs; a member of another model: queued to be embedded again); then log
    the keys when a backfill runs."""
    name = routing.state.name
    serving = routing.state.serving
    later = [m for m, _ in routing.written() if op.kind == "upsert" and other_model(m, serving)]
    for member in later:
        require_text(op.records, member)
    if routing.state.logging_writes:  # before the serving write: see _backfill
        registry.log_writes(name, op.touched, op.kind)
    op.apply(routing.serving)
    for member, store in routing.written():
        if member in later:  # after the serving write: a repair drained before it would copy nothing
            registry.add_repairs(name, member.url, op.touched, REEMBED)
            continue
        try:
            if store is None:
                raise VectorportError(routing.down.get(member.url, "the member could not be opened"))
            op.apply(store)
        except VectorportError as exc:
            log.warning("alias %s: %s missed a write (%s); queued for repair", name, member.label, exc)
            registry.add_repairs(name, member.url, op.touched, f"{type(exc).__name__}: {exc}")
            registry.bump(name, member.url, {"write_errors": 1})


def recopy(
    serving: VectorStore,
    member: VectorStore,
    keys: Sequence[str],
    embedder: Embedder | None = None,
    superseded: Callable[[Sequence[str]], set[str]] | None = None,
) -> int:
    """Make ``member`` hold what ``serving`` holds for ``keys`` (copied, or deleted when
    missing); returns how many records differed and were written. With ``embedder`` (the
    member's model is another one) records are compared by text and metadata and written with
    their text embedded by it. ``superseded`` (asked after ``serving`` is read, before
    ``member`` is written) names the keys ``serving`` lacks a newer write of: left as they are.

    Safe against a concurrent app write: after writing, the serving store is read again, and a
    key whose record changed since the first read (the app wrote it between this read and this
    write, so the copy may have replaced its newer record in the member) is copied again."""
    fixed = 0
    todo = list(dict.fromkeys(keys))
    for _ in range(RECOPY_ROUNDS):
        if not todo:
            return fixed
        truth = {r.key: r for r in serving.get(todo, include=_ALL)}
        held = {r.key: r for r in member.get(todo, include=_ALL)}
        if superseded is not None:
            newer = superseded(todo)
            todo = [k for k in todo if k not in newer]
            truth = {k: r for k, r in truth.items() if k not in newer}
        vectors = embedder is None
        stale = [r for k, r in truth.items() if k not in held or not agree(r, held[k], vectors)]
        gone = [k for k in todo if k not in truth and k in held]
        if stale:
            member.upsert(stale if embedder is None else reembedded(stale, embedder))
        if gone:
            member.delete(gone)
        fixed += len(stale) + len(gone)
        written = [r.key for r in stale] + gone
        again = {r.key: r for r in serving.get(written, include=_ALL)} if written else {}
        todo = [k for k in written if _changed(truth.get(k), again.get(k), vectors)]
    raise TransientError(f"{len(todo)} keys kept changing while being copied to {member.url.masked}")


def agree(truth: Record, held: Record, vectors: bool) -> bool:
    """Whether ``held`` is ``truth``: all of it, or (``vectors`` false: another model's
    vectors) its text and metadata."""
    if vectors:
        return same_content(truth, held)
    return truth.text == held.text and json_equal(truth.metadata or {}, held.metadata or {})


def _changed(before: Record | None, after: Record | None, vectors: bool) -> bool:
    if before is None or after is None:
        return (before is None) != (after is None)
    return not agree(before, after, vectors)


def repair(registry: Registry, routing: Routing, embedders: Embedders, limit: int = 500) -> tuple[int, int]:
    """Retry up to ``limit`` queued repairs: ``(repaired, still pending)``; a member of another
    model than its source's has the records' text embedded by its own. Repairs queued for a
    member that serves now (written just before a switch) are copied from the store that served
    those writes. A key whose source has a newer write queued is left to that write (above)."""
    name = routing.state.name
    queued = registry.repairs(name, limit)
    done = 0
    for url in sorted({r.member for r in queued}):
        mine = [r for r in queued if r.member == url]
        try:
            _repair_member(registry, routing, embedders, mine)
        except VectorportError as exc:
            registry.repair_failed([r.id for r in mine], f"{type(exc).__name__}: {exc}")
            continue
        registry.repaired([r.id for r in mine])
        done += len(mine)
    return done, registry.repair_count(name)


def _repair_member(registry: Registry, routing: Routing, embedders: Embedders, queued: list[Repair]) -> None:
    """Bring one member's ``queued`` keys back to its source, but the keys of which the source
    has a newer write queued (the sequence of a key's write: its newest entry's id)."""
    pair = _repair_pair(routing, queued[0].member)
    if pair is None:
        return
    (source_member, source), (member, target) = pair
    seq: dict[str, int] = {}
    for r in queued:
        seq[r.key] = max(r.id, seq.get(r.key, 0))

    def superseded(keys: Sequence[str]) -> set[str]:
        newest = registry.newest_repairs(routing.state.name, source_member.url, keys)
        return {k for k, at in newest.items() if at > seq.get(k, 0)}

    embedder = embedders.of(member) if other_model(member, source_member) else None
    recopy(source, target, sorted(seq), embedder, superseded)


def _repair_pair(
    routing: Routing, url: str
) -> tuple[tuple[Member, VectorStore], tuple[Member, VectorStore]] | None:
    """``((source member, store), (target member, store))`` of a member's repairs; ``None``:
    nothing to do (the member left the alias, or it serves now and no store served before)."""
    state = routing.state
    if url == state.serving.url:  # queued before a switch: copied from the store that served then
        before = sorted(state.written, key=lambda m: m.role is not Role.PREVIOUS)
        if not before:
            return None
        return (before[0], _opened(routing, before[0].url)), (state.serving, routing.serving)
    if url not in {m.url for m in state.others}:
        return None  # the member left the alias
    return (state.serving, routing.serving), (state.member(url), _opened(routing, url))


def _opened(routing: Routing, url: str) -> VectorStore:
    """The member's store, or the error that keeps its repairs queued (it is down)."""
    store = routing.stores.get(url)
    if store is None:
        raise VectorportError(routing.down.get(url, "the member could not be opened"))
    return store
