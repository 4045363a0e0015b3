"""The alias registry: each alias's phase, members and version, and what the alias records while
it runs (the touched-key log, the repair queue, the shadow log, counters and phase events).

Tables (one SQL text for SQLite and PostgreSQL, :mod:`._sql`):

=========================  ==============================================================
``vectorport_alias``       name, phase, version, sample: one row per alias
``vectorport_alias_member`` alias, url, role, feed, embedding_model, backfilled
``vectorport_alias_write`` seq, alias, key, op: keys written through the alias while a
                           backfill runs (:mod:`._backfill`)
``vectorport_alias_repair`` id, alias, member, key, attempts, error: writes a member missed (the
                           id orders them: a repair never applies an older write over a newer)
``vectorport_alias_shadow`` one row per shadowed query (bounded: the newest
                           :data:`SHADOW_LOG_ROWS` per alias are kept)
``vectorport_alias_count`` alias, member, counter, value: dropped shadow reads, errors
``vectorport_alias_event`` alias, at, phase, version, detail: the phase history
``vectorport_alias_quality`` alias, member, model, at, queries, ndcg, mrr, hit: each member's
                           quality on labelled queries, as ``status --queries`` measured it
=========================  ==============================================================

A phase change is one transaction that checks the version it read (a concurrent change is a
:class:`~vectorport.exceptions.ConflictError`) and bumps it; processes serving the alias compare
the version (one indexed read) at most every :data:`~._store.CHECK_INTERVAL` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..exceptions import Advice, Advised, Call, ConflictError, NotFoundError
from ._model import AliasState, Feed, Member, Phase, Role
from ._queues import Repair, WriteQueues
from ._sql import Connection, open_connection

__all__ = ["SHADOW_LOG_ROWS", "QualityRow", "Registry", "Repair", "ShadowRow"]

SHADOW_LOG_ROWS = 20_000
"""Shadowed queries kept per alias (the oldest are deleted as new ones arrive)."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectorport_alias (name TEXT PRIMARY KEY, phase TEXT NOT NULL, "
    "version BIGINT NOT NULL, sample DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_member (alias TEXT NOT NULL, url TEXT NOT NULL, "
    "role TEXT NOT NULL, feed TEXT NOT NULL, embedding_model TEXT, backfilled INTEGER NOT NULL, "
    "position INTEGER NOT NULL, PRIMARY KEY (alias, url))",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_write (seq {serial}, alias TEXT NOT NULL, "
    "key TEXT NOT NULL, op TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS vectorport_alias_write_key ON vectorport_alias_write (alias, seq)",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_repair (id {serial}, alias TEXT NOT NULL, "
    "member TEXT NOT NULL, key TEXT NOT NULL, attempts INTEGER NOT NULL, error TEXT, "
    "at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_shadow (id {serial}, alias TEXT NOT NULL, "
    "member TEXT NOT NULL, at DOUBLE PRECISION NOT NULL, shape TEXT NOT NULL, k INTEGER NOT NULL, "
    "overlap DOUBLE PRECISION, rbo DOUBLE PRECISION, top1 DOUBLE PRECISION, "
    "score_diff DOUBLE PRECISION, serving_ms DOUBLE PRECISION, candidate_ms DOUBLE PRECISION, "
    "error TEXT)",
    "CREATE INDEX IF NOT EXISTS vectorport_alias_shadow_at ON vectorport_alias_shadow (alias, id)",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_count (alias TEXT NOT NULL, member TEXT NOT NULL, "
    "counter TEXT NOT NULL, value BIGINT NOT NULL, PRIMARY KEY (alias, member, counter))",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_event (id {serial}, alias TEXT NOT NULL, "
    "at DOUBLE PRECISION NOT NULL, phase TEXT NOT NULL, version BIGINT NOT NULL, detail TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vectorport_alias_quality (id {serial}, alias TEXT NOT NULL, "
    "member TEXT NOT NULL, model TEXT, at DOUBLE PRECISION NOT NULL, queries INTEGER NOT NULL, "
    "ndcg DOUBLE PRECISION NOT NULL, mrr DOUBLE PRECISION NOT NULL, hit DOUBLE PRECISION NOT NULL)",
)

_BUMP = (
    "INSERT INTO vectorport_alias_count (alias, member, counter, value) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (alias, member, counter) DO UPDATE SET value = vectorport_alias_count.value + "
    "excluded.value"
)

_SHADOW_COLUMNS = "member, at, shape, k, overlap, rbo, top1, score_diff, serving_ms, candidate_ms, error"


@dataclass(frozen=True)
class ShadowRow:
    """One shadowed query: the candidate's answer compared with the served one."""

    member: str
    at: float
    shape: str
    """The filter's shape (fields and operators, no values): ``(none)`` without a filter."""
    k: int
    overlap: float | None
    rbo: float | None
    top1: float | None
    """1.0 when both top-1 keys agree, else 0.0."""
    score_diff: float | None
    """Mean absolute score difference over the keys both returned."""
    serving_ms: float
    candidate_ms: float | None
    error: str | None = None


@dataclass(frozen=True)
class QualityRow:
    """One member's quality on labelled queries, in its model, when it was measured."""

    member: str
    model: str | None
    at: float
    queries: int
    ndcg: float
    mrr: float
    hit: float


def _timings(row: ShadowRow) -> tuple[float, float | None, str | None]:
    return row.serving_ms, row.candidate_ms, row.error


def _members(state: AliasState) -> list[tuple[str, Sequence[Any]]]:
    text = (
        "INSERT INTO vectorport_alias_member (alias, url, role, feed, embedding_model, backfilled, "
        "position) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    return [
        (text, (state.name, m.url, m.role.value, m.feed.value, m.embedding_model, int(m.backfilled), i))
        for i, m in enumerate(state.members)
    ]


def _event(state: AliasState, detail: str) -> tuple[str, Sequence[Any]]:
    return (
        "INSERT INTO vectorport_alias_event (alias, at, phase, version, detail) VALUES (?, ?, ?, ?, ?)",
        (state.name, time.time(), state.phase.value, state.version, detail),
    )


class Registry(WriteQueues):
    """The registry of aliases at one location (``None``: the user's SQLite file): the
    aliases, their events, shadow log, quality and counters; the writes' log and repair queue
    (:class:`~._queues.WriteQueues`)."""

    def __init__(self, location: str | None = None, *, create: bool = True) -> None:
        self.conn: Connection = open_connection(location)
        self.location = self.conn.registry
        self.label = self.conn.label
        if create:
            dialect = self.conn.dialect
            lock = [(dialect.schema_lock, ())] if dialect.schema_lock else []
            self.conn.run([*lock, *((s.format(serial=dialect.serial), ()) for s in _SCHEMA)])

    def fork(self) -> Registry:
        """Another connection to the same registry (its tables made already): a background
        thread's, so that its writes never hold the lock the app's calls take."""
        return Registry(self.location, create=False)

    def close(self) -> None:
        self.conn.close()

    # ----------------------------------------------------------------- aliases
    def version(self, name: str) -> int | None:
        """The alias's version (``None`` when there is no such alias): what processes poll."""
        rows = self.conn.rows("SELECT version FROM vectorport_alias WHERE name = ?", (name,))
        return int(rows[0][0]) if rows else None

    def load(self, name: str) -> AliasState | None:
        """The alias as the registry holds it now, or ``None``."""
        head = self.conn.rows("SELECT phase, version, sample FROM vectorport_alias WHERE name = ?", (name,))
        if not head:
            return None
        rows = self.conn.rows(
            "SELECT url, role, feed, embedding_model, backfilled FROM vectorport_alias_member "
            "WHERE alias = ? ORDER BY position",
            (name,),
        )
        members = tuple(Member(u, Role(r), Feed(f), m, bool(b)) for u, r, f, m, b in rows)
        phase, version, sample = head[0]
        return AliasState(name, Phase(phase), int(version), float(sample), members)

    def require(self, name: str) -> AliasState:
        """The alias, or a :class:`NotFoundError` saying how to create it."""
        state = self.load(name)
        if state is None:
            raise no_alias(name, self.label, self.names())
        return state

    def names(self) -> list[str]:
        return [r[0] for r in self.conn.rows("SELECT name FROM vectorport_alias ORDER BY name")]

    def create(self, state: AliasState, detail: str) -> None:
        """Record a new alias (a :class:`ConflictError` when the name is taken)."""
        if self.version(state.name) is not None:
            raise ConflictError(
                Advised.of(
                    "alias {!r} already exists in the registry {}; see `{}`",
                    state.name,
                    self.label,
                    Call("alias status", (state.name,)),
                )
            )
        head = (
            "INSERT INTO vectorport_alias (name, phase, version, sample, updated) VALUES (?, ?, ?, ?, ?)",
            (state.name, state.phase.value, state.version, state.sample, time.time()),
        )
        self.conn.run([head, *_members(state), _event(state, detail)])

    def change(self, before: AliasState, after: AliasState, detail: str) -> None:
        """Move the alias from ``before`` to ``after`` in one transaction, refused with a
        :class:`ConflictError` when another change landed since ``before`` was read."""
        if self.version(before.name) != before.version:
            raise ConflictError(
                Advised.of(
                    "alias {!r} changed while this command ran (version {} is gone); read `{}` and "
                    "run the command again",
                    before.name,
                    before.version,
                    Call("alias status", (before.name,)),
                )
            )
        head = (
            "UPDATE vectorport_alias SET phase = ?, version = ?, sample = ?, updated = ? "
            "WHERE name = ? AND version = ?",
            (after.phase.value, after.version, after.sample, time.time(), before.name, before.version),
        )
        drop = ("DELETE FROM vectorport_alias_member WHERE alias = ?", (before.name,))
        self.conn.run([head, drop, *_members(after), _event(after, detail)])
        if self.version(before.name) != after.version:  # pragma: no cover - a lost race
            raise ConflictError(f"alias {before.name!r} was changed concurrently; run the command again")

    def events(self, name: str) -> list[dict[str, Any]]:
        rows = self.conn.rows(
            "SELECT at, phase, version, detail FROM vectorport_alias_event WHERE alias = ? ORDER BY id",
            (name,),
        )
        return [{"at": at, "phase": p, "version": int(v), "detail": d} for at, p, v, d in rows]

    # ----------------------------------------------------------------- shadow log, counters
    def add_shadow(
        self, name: str, rows: Sequence[ShadowRow], counts: dict[str, dict[str, int]] | None = None
    ) -> None:
        """Append shadowed queries, keep the newest :data:`SHADOW_LOG_ROWS` of the alias and add
        ``counts`` (per member, as :meth:`bump`), in one transaction."""
        text = f"INSERT INTO vectorport_alias_shadow (alias, {_SHADOW_COLUMNS}) VALUES (?{', ?' * 11})"
        values = [
            (name, r.member, r.at, r.shape, r.k, r.overlap, r.rbo, r.top1, r.score_diff, *_timings(r))
            for r in rows
        ]
        trim = (
            "DELETE FROM vectorport_alias_shadow WHERE alias = ? AND id <= "
            "(SELECT MAX(id) FROM vectorport_alias_shadow WHERE alias = ?) - ?"
        )
        bumps = [
            (name, member, c, v)
            for member, by in sorted((counts or {}).items())
            for c, v in sorted(by.items())
            if v
        ]
        statements: list[tuple[str, Sequence[Any]]] = [(text, values)] if values else []
        if values:
            statements.append((trim, [(name, name, SHADOW_LOG_ROWS)]))
        if bumps:
            statements.append((_BUMP, bumps))
        if statements:
            self.conn.run(statements, many=True)

    def shadow_rows(
        self, name: str, member: str | None = None, limit: int = SHADOW_LOG_ROWS
    ) -> list[ShadowRow]:
        """The newest shadowed queries (of ``member``, or all), oldest first."""
        where, params = ("alias = ? AND member = ?", (name, member)) if member else ("alias = ?", (name,))
        rows = self.conn.rows(
            f"SELECT {_SHADOW_COLUMNS} FROM vectorport_alias_shadow WHERE {where} ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        return [ShadowRow(*r) for r in reversed(rows)]

    def clear_shadow(self, name: str, member: str) -> None:
        self.conn.run(
            [("DELETE FROM vectorport_alias_shadow WHERE alias = ? AND member = ?", (name, member))]
        )

    def add_quality(self, name: str, rows: Sequence[QualityRow]) -> None:
        text = (
            "INSERT INTO vectorport_alias_quality (alias, member, model, at, queries, ndcg, mrr, hit) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        values = [(name, r.member, r.model, r.at, r.queries, r.ndcg, r.mrr, r.hit) for r in rows]
        self.conn.run([(text, values)], many=True)

    def quality(self, name: str) -> list[QualityRow]:
        """The newest measurement of each member in each model, in the order they were made."""
        rows = self.conn.rows(
            "SELECT member, model, at, queries, ndcg, mrr, hit FROM vectorport_alias_quality "
            "WHERE alias = ? ORDER BY id",
            (name,),
        )
        newest = {(r[0], r[1]): QualityRow(*r) for r in rows}
        return list(newest.values())

    def bump(self, name: str, member: str, counts: dict[str, int]) -> None:
        """Add to the alias's counters of a member (dropped shadow reads, member errors)."""
        self.conn.run([(_BUMP, [(name, member, c, v) for c, v in sorted(counts.items()) if v])], many=True)

    def counters(self, name: str) -> dict[str, dict[str, int]]:
        rows = self.conn.rows(
            "SELECT member, counter, value FROM vectorport_alias_count WHERE alias = ?", (name,)
        )
        out: dict[str, dict[str, int]] = {}
        for member, counter, value in rows:
            out.setdefault(member, {})[counter] = int(value)
        return out


def no_alias(name: str, label: str, names: list[str] | None = None) -> NotFoundError:
    """The error of an alias the registry ``label`` does not hold (``names``: those it holds),
    saying how to create it."""
    known = f"; aliases there: {', '.join(names)}" if names else ""
    create = Call("alias create", (name,), (Advice("serve", "URL"),))
    return NotFoundError(
        Advised.of("no alias {!r} in the registry {}{}; create it with `{}`", name, label, known, create)
    )
