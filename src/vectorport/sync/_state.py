"""The sync state: what the target holds, per record and per key bin, in one SQLite file.

Tables: ``records`` (key → bin, digest of the content the target holds), ``held`` (source
records held back, the target cannot hold them: key → problems), ``segments``
(the key bins; kind 0: the fold of ``records``; kind 1: the fold of the source records the current
pass has read so far) and ``meta`` (identity, bin count as ``segments``, the current pass and the
last one's summary). The table and meta entry keep the name ``segments``: state files on disk
hold them.

Why it survives ``kill -9``: SQLite commits are atomic, and the order of writes keeps the
state on the safe side of the target at every instant. Before a record is written to (or
deleted from) the target its row is set to :func:`~._digest.extra_digest` ("content unknown")
and committed; after the target acknowledges, the row gets the real digest. A row therefore
either names exactly what the target holds or says "unknown", which never equals a source
digest, so the next pass rewrites (or deletes) that record. The scan cursor and the source fold
are committed together, behind the records the target acknowledged.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._digest import BinSums, extra_digest
from .._models import JSON
from .._paths import writable_file
from ..exceptions import Advice, Advised, ConfigurationError

__all__ = ["SyncState", "committed", "recorded", "recorded_fixed"]

FORMAT = 1
TARGET, SOURCE = 0, 1
_CHUNK = 500
"""Keys per ``IN (...)`` query (SQLite's default variable limit is 32,766; stay small)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    key TEXT PRIMARY KEY, seg INTEGER NOT NULL, digest BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_seg ON records (seg);
CREATE TABLE IF NOT EXISTS held (key TEXT PRIMARY KEY, problems TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS segments (
    kind INTEGER NOT NULL, seg INTEGER NOT NULL, digest BLOB NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (kind, seg)
) WITHOUT ROWID;
"""


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class SyncState:
    """Open (or create) the state file at ``path`` for the sync ``identity`` (source and target
    labels). Everything runs on the calling thread."""

    def __init__(self, path: str | os.PathLike[str], identity: dict[str, JSON]) -> None:
        self.path = writable_file(Path(path), "sync state")
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigurationError(
                Advised.of(
                    "cannot open the sync state {}: {}; pass another {} path", self.path, exc, Advice("state")
                )
            ) from exc
        self.db.execute("BEGIN")
        stored = self._meta("identity")
        if stored is None:
            self._set("format", FORMAT)
            self._set("identity", identity)
        elif self._meta("format") != FORMAT:
            raise ConfigurationError(f"{self.path} is not a vectorport sync state (format {FORMAT})")
        else:
            for name, value in identity.items():
                if isinstance(stored, dict) and stored.get(name) != value:
                    self.db.execute("ROLLBACK")
                    raise ConfigurationError(
                        Advised.of(
                            "the sync state {} belongs to another sync (it records {} {!r}, this run has "
                            "{!r}); pass another {} path",
                            self.path,
                            name,
                            stored.get(name),
                            value,
                            Advice("state"),
                        )
                    )
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")
        parts = self._meta("segments")
        self.parts: int | None = int(parts) if isinstance(parts, int) else None
        self.target = BinSums(self.parts or 1)
        self.source = BinSums(self.parts or 1)
        if self.parts:
            for kind, sums in ((TARGET, self.target), (SOURCE, self.source)):
                sums.load(self.db.execute("SELECT seg, digest, n FROM segments WHERE kind = ?", (kind,)))

    # ---------------------------------------------------------------- meta
    def _meta(self, name: str) -> JSON:
        row = self.db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def _set(self, name: str, value: JSON) -> None:
        self.db.execute(
            "INSERT INTO meta (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, json.dumps(value)),
        )

    def get(self, name: str) -> JSON:
        """A value of the ``meta`` table (``pass``, ``last``, ``transform``)."""
        return self._meta(name)

    def put(self, name: str, value: JSON) -> None:
        """Set a ``meta`` value (written at the next :meth:`commit`)."""
        self._set(name, value)

    # ------------------------------------------------------------- passes
    def reset(self, parts: int) -> None:
        """Forget every record (a full pass rebuilds them) and use ``parts`` key bins."""
        self.db.execute("DELETE FROM records")
        self.db.execute("DELETE FROM segments")
        self.parts = parts
        self._set("segments", parts)
        self.target = BinSums(parts)
        self.source = BinSums(parts)
        self.target.dirty = set(range(parts))

    def restart_source(self) -> None:
        """Zero the fold of the source (a new pass, or a scan restarted from the beginning)."""
        self.source = BinSums(self.parts or 1)
        self.source.dirty = set(range(self.source.parts))

    def commit(self) -> None:
        """Write the touched bin folds and commit everything since the last commit."""
        for kind, sums in ((TARGET, self.target), (SOURCE, self.source)):
            touched = sums.clean()
            if touched:
                self.db.executemany(
                    "INSERT INTO segments (kind, seg, digest, n) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (kind, seg) DO UPDATE SET digest = excluded.digest, n = excluded.n",
                    [(kind, *row) for row in sums.rows(sorted(touched))],
                )
        # Ctrl-C can land between COMMIT and BEGIN; the save in the caller's finally then finds
        # no transaction open, and everything before it is already committed.
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self.db.execute("BEGIN")

    # ------------------------------------------------------------ records
    def lookup(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The recorded digest of each of ``keys`` the target holds (as far as the state knows)."""
        found: dict[str, bytes] = {}
        for chunk in _chunks(keys):
            marks = ",".join("?" * len(chunk))
            for key, digest in self.db.execute(
                f"SELECT key, digest FROM records WHERE key IN ({marks})", tuple(chunk)
            ):
                found[key] = digest
        return found

    def record(self, rows: Sequence[tuple[str, int, bytes]]) -> None:
        """Set ``(key, bin, digest)`` rows, keeping the target fold in step."""
        if not rows:
            return
        old = self.lookup([r[0] for r in rows])
        for key, seg, digest in rows:
            prev = old.get(key)
            if prev == digest:
                continue
            if prev is not None:
                self.target.remove(seg, prev)
            self.target.add(seg, digest)
        self.db.executemany(
            "INSERT INTO records (key, seg, digest) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET digest = excluded.digest",
            rows,
        )

    def mark_unknown(self, keys: Sequence[tuple[str, int]]) -> None:
        """Record that the target's content for these ``(key, bin)`` is about to change."""
        self.record([(key, seg, extra_digest(key)) for key, seg in keys])

    def forget(self, keys: Sequence[tuple[str, int]]) -> None:
        """Remove rows (the target deleted these records)."""
        old = self.lookup([k for k, _ in keys])
        for key, seg in keys:
            prev = old.get(key)
            if prev is not None:
                self.target.remove(seg, prev)
        for chunk in _chunks([k for k, _ in keys]):
            self.db.execute(f"DELETE FROM records WHERE key IN ({','.join('?' * len(chunk))})", tuple(chunk))

    def keys_in(self, bins: Sequence[int]) -> list[tuple[str, int]]:
        """Every recorded ``(key, bin)`` of ``bins``."""
        out: list[tuple[str, int]] = []
        for chunk in _chunks(bins):
            marks = ",".join("?" * len(chunk))
            out.extend(self.db.execute(f"SELECT key, seg FROM records WHERE seg IN ({marks})", tuple(chunk)))
        return out

    def all_keys(self) -> list[str]:
        """Every key the state says the target holds (a truncated source: all are candidates)."""
        return [row[0] for row in self.db.execute("SELECT key FROM records")]

    # --------------------------------------------------------------- held
    def hold(self, rows: Sequence[tuple[str, list[str]]]) -> None:
        """Record source records held back (``(key, problems)``): the target cannot hold them,
        so every pass reports them until the source changes them or they are gone."""
        self.db.executemany(
            "INSERT INTO held (key, problems) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET problems = excluded.problems",
            [(key, json.dumps(problems)) for key, problems in rows],
        )

    def release(self, keys: Sequence[str]) -> None:
        """These keys are not held back any more (written, or gone from the source)."""
        for chunk in _chunks(keys):
            self.db.execute(f"DELETE FROM held WHERE key IN ({','.join('?' * len(chunk))})", tuple(chunk))

    def release_all(self) -> None:
        """Forget every held key (a new scan pass finds them again)."""
        self.db.execute("DELETE FROM held")

    def held(self) -> list[tuple[str, list[str]]]:
        """Every ``(key, problems)`` held back, by key."""
        rows = self.db.execute("SELECT key, problems FROM held ORDER BY key")
        return [(key, json.loads(problems)) for key, problems in rows]

    @property
    def records(self) -> int:
        """Records the state says the target holds."""
        return self.target.total

    def close(self) -> None:
        with contextlib.suppress(sqlite3.OperationalError):
            self.db.execute("ROLLBACK")
        self.db.close()


def recorded(path: str | os.PathLike[str]) -> int | None:
    """The records the state at ``path`` says the target holds, read without writing; ``None``
    when there is no finished sync to go by (no file, no first sync yet, or a pass to continue)."""
    if not Path(path).exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT name, value FROM meta WHERE name IN ('segments', 'pass')"))
            if "segments" not in meta or json.loads(meta.get("pass", "null")) is not None:
                return None
            row = db.execute(f"SELECT coalesce(sum(n), 0) FROM segments WHERE kind = {TARGET}").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return int(row[0])


def recorded_fixed(path: str | os.PathLike[str]) -> dict[str, JSON] | None:
    """The fixed options (:meth:`~vectorport._options.RunOptions.fixed`) of what the target
    holds by the state at ``path``, read without writing: those of the pass an earlier run left
    unfinished, else of the last finished pass; ``None`` when there is neither."""
    if not Path(path).exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT name, value FROM meta WHERE name IN ('transform', 'pass')"))
        finally:
            db.close()
    except sqlite3.Error:
        return None
    running = json.loads(meta.get("pass", "null"))
    if isinstance(running, dict) and isinstance(running.get("transform"), dict):
        return dict(running["transform"])
    last = json.loads(meta.get("transform", "null"))
    return dict(last) if isinstance(last, dict) else None


def committed(state: str | os.PathLike[str]) -> dict[str, JSON] | None:
    """The interrupted pass recorded in the state file at ``state`` (``None`` when no pass is
    running): what the message printed on Ctrl-C reports."""
    try:
        db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE name = 'pass'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    value = None if row is None else json.loads(row[0])
    return value if isinstance(value, dict) else None
