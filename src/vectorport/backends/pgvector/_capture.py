"""Change capture on a pgvector collection's table: what ``sync`` reads instead of scanning.

Two ways, installed by :meth:`Capture.setup_capture` and removed by
:meth:`Capture.teardown_capture` (nothing stays on the server otherwise):

``slot``
    A publication on the table and a logical replication slot with the ``pgoutput`` plugin,
    read through SQL (psycopg 3 has no streaming replication API):
    ``pg_logical_slot_peek_binary_changes`` reads committed transactions past the slot's
    confirmed position without consuming them, :mod:`._pgoutput` decodes them, and
    ``pg_replication_slot_advance`` confirms a position once the target holds what came before
    it. Needs ``wal_level = logical`` and a role with ``REPLICATION`` (or superuser) that owns
    the table. The old row of an update or delete carries the replica identity columns; when
    the key is not among them (LlamaIndex's ``node_id``, a key kept in the metadata, a key
    expression) the table's replica identity is set to ``FULL`` and restored at teardown (the
    publication's comment records what it was).
``outbox``
    For roles that may not create slots (managed hosts without the replication privilege): a
    row trigger computes the chunk key of the old and the new row with the layout's own key
    expression and appends it to a small table; reading takes the committed rows, confirming
    deletes them.

Either way a change is a chunk key: the consumer reads the key's current record back with
the store's ``get`` (so the collection's scope — LangChain's shared table — and every layout
apply as they do to every read) and deletes the key from the target when the source no longer
holds it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from ..._changes import CaptureSetup, ChangeBatch
from ...exceptions import Action, Advised, ConfigurationError, NotFoundError, Step, VectorportError
from ._connections import usable
from ._pgoutput import UNCHANGED, Begin, Change, Commit, Relation, Truncate, decode, lsn_int, lsn_text
from ._quote import Identifier, Literal
from .errors import pg_errors

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["Capture", "OutboxFeed", "SlotFeed"]

NOTE_EVERY = 60.0
"""Seconds between notes of the last confirmation in a capture's note (a comment: a catalog
write, not one per batch)."""
LOCK_WAIT = 5.0
"""Seconds a sync waits for the capture's lock before it refuses: the session of a follower
killed a moment ago ends when the server notices, and the same command run again should not be
refused for that."""
_JSON_TYPES = frozenset({114, 3802})  # json, jsonb: passed to jsonb_populate_recordset as JSON
_REPLICA_IDENTITY = {"d": "DEFAULT", "n": "NOTHING", "i": "USING INDEX"}


@dataclass(frozen=True)
class _Names:
    slot: str
    outbox: str
    trigger: str


class Capture:
    """Change capture on the store's table: ``setup_capture``, ``teardown_capture`` and
    ``change_feed`` (the store forwards them), on the store's connections (its engine's when
    it has one)."""

    def __init__(self, store: PgVectorStore) -> None:
        self.store = store

    def _capture_names(self) -> _Names:
        try:
            params = sorted(self.store.layout.columns.scope_params)
        except NotFoundError:
            params = []  # the table is gone (a teardown): a table of its own has no scope
        scope = json.dumps(params, default=str)
        digest = hashlib.sha256(f"{self.store.schema}.{self.store.table}\n{scope}".encode()).hexdigest()[:12]
        base = f"vectorport_capture_{digest}"
        return _Names(slot=base, outbox=f"vectorport_outbox_{digest}", trigger=base)

    def _conn(self) -> psycopg.Connection[Any]:
        """The operation's connection (inside :meth:`~._server.Server.errors`): the thread's
        own, or one lent by the store's SQLAlchemy engine for the operation."""
        _ = self.store.spec  # binds the layout (opens the collection)
        return self.store.server.session().conn

    def hold(self) -> tuple[psycopg.Connection[Any], Callable[[], None]]:
        """A feed's connection, kept until the returned callable (a new one of the store's, or
        one lent by its engine's pool: a long ``sync --follow`` keeps one borrowed)."""
        _ = self.store.spec
        with self.store.server.errors("capture"):
            return self.store.server.pool.hold()

    def _check_capturable(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute(
            "SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            (self.store.schema, self.store.table),
        ).fetchone()
        kind = row[0] if row else None
        if kind not in ("r", "p"):
            what = {"v": "a view", "m": "a materialized view", "f": "a foreign table"}.get(
                str(kind), "not a table"
            )
            raise ConfigurationError(
                f"{self.store._where}: {self.store.schema}.{self.store.table} is {what}; change capture "
                "reads a table's writes: capture the table it reads from, or sync this one without "
                "capture (a scan)"
            )

    def capture_method(self) -> tuple[str, str]:
        """The way :meth:`setup_capture` would choose here, and why."""
        with self.store.server.errors("capture"):
            conn = self._conn()
            self._check_capturable(conn)
            return _choose(conn)

    def setup_capture(self, method: str = "auto") -> CaptureSetup:
        """Install change capture on the collection's table (``auto``: a slot when the server
        and the role allow one, else the outbox trigger). Installing again is a no-op."""
        if method not in ("auto", "slot", "outbox"):
            raise ConfigurationError(f"capture method must be auto, slot or outbox, got {method!r}")
        names = self._capture_names()
        with self.store.server.errors("capture setup"):
            conn = self._conn()
            self._check_capturable(conn)
            installed = _installed(conn, names, self.store.schema)
            if installed:
                return CaptureSetup(installed, names.slot, self._installed_note(), [])
            chosen, why = _choose(conn)
            if method != "auto":
                if method == "slot" and chosen != "slot":
                    raise ConfigurationError(f"{self.store._where}: cannot capture with a slot: {why}")
                chosen, why = method, "asked for"
            install = self._install_slot if chosen == "slot" else self._install_outbox
            made = install(conn, names)
        return CaptureSetup(chosen, names.slot, why, made)

    def _installed_note(self) -> str:
        """Why nothing was installed, naming the target the capture feeds (a second target
        cannot share it)."""
        feed = self.change_feed()
        try:
            owner = feed.owner() if feed is not None else None
        finally:
            if feed is not None:
                feed.close()
        if owner is None:
            return "already installed"
        return (
            f"already installed; it feeds the sync into {owner}, and one capture feeds one target "
            "(a sync into another target scans the source; see 'Two targets' in docs/sync.md)"
        )

    def teardown_capture(self) -> list[str]:
        """Remove whatever capture is installed on the table: slot, publication, replica
        identity change, trigger, function, outbox table. Returns what was removed."""
        names = self._capture_names()
        removed: list[str] = []
        with self.store.server.errors("capture teardown"):
            conn = self.store.server.session().conn  # the table may be gone: no layout to bind
            if conn.execute(
                "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (names.slot,)
            ).fetchone():
                conn.execute("SELECT pg_drop_replication_slot(%s)", (names.slot,))
                removed.append(f"replication slot {names.slot}")
            row = conn.execute(
                "SELECT obj_description(oid, 'pg_publication') FROM pg_publication WHERE pubname = %s",
                (names.slot,),
            ).fetchone()
            if row is not None:
                restore = json.loads(row[0] or "{}")
                before = restore.get("restore_replica_identity")
                if before in _REPLICA_IDENTITY and self.table_exists(conn):
                    clause: sql.Composable = sql.SQL(_REPLICA_IDENTITY[before])
                    if before == "i":
                        clause = sql.SQL("{} {}").format(clause, Identifier(str(restore.get("index"))))
                    table = self.store.layout.qualified
                    conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY {}").format(table, clause))
                    removed.append(f"replica identity FULL (back to {_REPLICA_IDENTITY[before]})")
                conn.execute(sql.SQL("DROP PUBLICATION {}").format(Identifier(names.slot)))
                removed.append(f"publication {names.slot}")
            removed += self._drop_outbox(conn, names)
        return removed

    def change_feed(self) -> SlotFeed | OutboxFeed | None:
        """The installed capture's feed (``None`` when none is installed)."""
        names = self._capture_names()
        conn, give_back = self.hold()
        try:
            with self.store.server.errors("capture"):
                kind = _installed(conn, names, self.store.schema)
                if kind == "slot":
                    return SlotFeed(self.store, (conn, give_back), names)
                if kind == "outbox":
                    return OutboxFeed(self.store, (conn, give_back), names)
        except BaseException:
            give_back()
            raise
        give_back()
        return None

    def table_exists(self, conn: psycopg.Connection[Any]) -> bool:
        table = Identifier(self.store.schema, self.store.table)
        row = conn.execute("SELECT to_regclass(%s)", (table.object_name(conn),)).fetchone()
        return bool(row and row[0] is not None)

    def health(self) -> dict[str, Any] | None:
        """The installed capture's health (``None`` when none is installed): what it holds back
        on the server (a slot's retained WAL, the outbox's rows), how far it is behind, the
        target it feeds and when that last confirmed a batch."""
        feed = self.change_feed()
        if feed is None:
            return None
        try:
            return feed.health()
        finally:
            feed.close()

    def _install_slot(self, conn: psycopg.Connection[Any], names: _Names) -> list[str]:
        made: list[str] = []
        identity = conn.execute(
            "SELECT relreplident FROM pg_class WHERE oid = %s::regclass",
            (self.store.layout.qualified.object_name(conn),),
        ).fetchone()
        before = str(identity[0]) if identity else "d"
        with conn.transaction():
            conn.execute(
                sql.SQL("CREATE PUBLICATION {} FOR TABLE {}").format(
                    Identifier(names.slot), self.store.layout.qualified
                )
            )
            made.append(f"publication {names.slot}")
            restore = None
            if before != "f" and not self._key_in_identity(conn, before):
                conn.execute(
                    sql.SQL("ALTER TABLE {} REPLICA IDENTITY FULL").format(self.store.layout.qualified)
                )
                made.append("replica identity FULL (the key is not in the table's replica identity)")
                restore = before
            index = conn.execute(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE i.indrelid = %s::regclass AND i.indisreplident",
                (self.store.layout.qualified.object_name(conn),),
            ).fetchone()
            note = {"restore_replica_identity": restore, "index": index[0] if index else None}
            conn.execute(
                sql.SQL("COMMENT ON PUBLICATION {} IS {}").format(
                    Identifier(names.slot), Literal(json.dumps(note))
                )
            )
        # outside the transaction: a slot is created at a consistent point, not in one that wrote
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (names.slot,))
        made.append(f"replication slot {names.slot}")
        return made

    def _key_in_identity(self, conn: psycopg.Connection[Any], identity: str) -> bool:
        """Whether a delete's old tuple (replica identity columns only) holds the chunk key."""
        cols = self.store.layout.columns
        if cols.key_kind in ("expression", "field") or cols.keep_key or identity == "n":
            return False
        flag = "indisprimary" if identity == "d" else "indisreplident"
        rows = conn.execute(
            f"SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            f"AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.{flag}",
            (self.store.layout.qualified.object_name(conn),),
        ).fetchall()
        return [r[0] for r in rows] == [cols.key]

    def _install_outbox(self, conn: psycopg.Connection[Any], names: _Names) -> list[str]:
        schema = Identifier(self.store.schema)
        outbox = Identifier(self.store.schema, names.outbox)
        function = Identifier(self.store.schema, names.trigger)
        key = self.store.layout.columns.key_expr("t")
        body = sql.SQL(
            "BEGIN\n"
            "  IF TG_OP = 'TRUNCATE' THEN\n"
            "    INSERT INTO {outbox} (key, op) VALUES (NULL, 'T'); RETURN NULL;\n"
            "  END IF;\n"
            "  IF TG_OP IN ('UPDATE', 'DELETE') THEN\n"
            "    INSERT INTO {outbox} (key, op) SELECT {key}, 'D' FROM (SELECT OLD.*) AS t;\n"
            "  END IF;\n"
            "  IF TG_OP IN ('INSERT', 'UPDATE') THEN\n"
            "    INSERT INTO {outbox} (key, op) SELECT {key}, 'U' FROM (SELECT NEW.*) AS t;\n"
            "  END IF;\n"
            "  RETURN NULL;\n"
            "END"
        ).format(outbox=outbox, key=key)
        with conn.transaction():
            conn.execute(
                sql.SQL(
                    'CREATE TABLE {} (id bigserial PRIMARY KEY, key text, op "char" NOT NULL, '
                    "at timestamptz NOT NULL DEFAULT clock_timestamp())"
                ).format(outbox)
            )
            conn.execute(
                sql.SQL(
                    "CREATE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql SET search_path = {} AS {}"
                ).format(function, schema, Literal(body.as_string(conn)))
            )
            conn.execute(
                sql.SQL(
                    "CREATE TRIGGER {} AFTER INSERT OR UPDATE OR DELETE ON {} "
                    "FOR EACH ROW EXECUTE FUNCTION {}()"
                ).format(Identifier(names.trigger), self.store.layout.qualified, function)
            )
            conn.execute(
                sql.SQL(
                    "CREATE TRIGGER {} AFTER TRUNCATE ON {} FOR EACH STATEMENT EXECUTE FUNCTION {}()"
                ).format(Identifier(names.trigger + "_t"), self.store.layout.qualified, function)
            )
        return [
            f"table {self.store.schema}.{names.outbox}",
            f"function {self.store.schema}.{names.trigger}()",
            f"triggers {names.trigger}, {names.trigger}_t on {self.store.schema}.{self.store.table}",
        ]

    def _drop_outbox(self, conn: psycopg.Connection[Any], names: _Names) -> list[str]:
        removed: list[str] = []
        if self.table_exists(conn):
            for trigger in (names.trigger, names.trigger + "_t"):
                found = conn.execute(
                    "SELECT 1 FROM pg_trigger WHERE tgname = %s AND tgrelid = %s::regclass",
                    (trigger, self.store.layout.qualified.object_name(conn)),
                ).fetchone()
                if found:
                    conn.execute(
                        sql.SQL("DROP TRIGGER {} ON {}").format(
                            Identifier(trigger), self.store.layout.qualified
                        )
                    )
                    removed.append(f"trigger {trigger}")
        function = Identifier(self.store.schema, names.trigger)
        if conn.execute("SELECT to_regprocedure(%s)", (f"{function.object_name(conn)}()",)).fetchone()[0]:  # type: ignore[index]
            conn.execute(sql.SQL("DROP FUNCTION {}() CASCADE").format(function))
            removed.append(f"function {self.store.schema}.{names.trigger}()")
        outbox = Identifier(self.store.schema, names.outbox)
        if conn.execute("SELECT to_regclass(%s)", (outbox.object_name(conn),)).fetchone()[0]:  # type: ignore[index]
            conn.execute(sql.SQL("DROP TABLE {}").format(outbox))
            removed.append(f"table {self.store.schema}.{names.outbox}")
        return removed


def _choose(conn: psycopg.Connection[Any]) -> tuple[str, str]:
    """``slot`` or ``outbox`` for this server and role, and why."""
    row = conn.execute(
        "SELECT current_setting('wal_level'), r.rolsuper OR r.rolreplication, current_user "
        "FROM pg_roles r WHERE r.rolname = current_user"
    ).fetchone()
    wal_level, replication, user = (row[0], bool(row[1]), row[2]) if row else ("?", False, "?")
    if wal_level != "logical":
        return "outbox", (
            f"the server runs with wal_level={wal_level} (a replication slot needs wal_level=logical "
            "and a restart), so a trigger records the changed keys"
        )
    if not replication:
        return "outbox", (
            f"the role {user} has no REPLICATION privilege (a replication slot needs it), so a "
            "trigger records the changed keys"
        )
    return "slot", "wal_level=logical and the role may create replication slots: logical decoding (pgoutput)"


def _installed(conn: psycopg.Connection[Any], names: _Names, schema: str) -> str | None:
    slot = conn.execute(
        "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND database = current_database()",
        (names.slot,),
    ).fetchone()
    if slot:
        return "slot"
    outbox = conn.execute(
        "SELECT to_regclass(%s)", (Identifier(schema, names.outbox).object_name(conn),)
    ).fetchone()
    return "outbox" if outbox and outbox[0] is not None else None


def _parsed_note(text: str | None) -> dict[str, Any]:
    """A capture's note (a JSON object in a comment; empty when there is none)."""
    note = json.loads(text) if text else {}
    return note if isinstance(note, dict) else {}


def _lock_key(name: str) -> int:
    """The advisory lock key of a capture (a signed 64-bit number drawn from its name)."""
    return int.from_bytes(
        hashlib.sha256(f"vectorport capture {name}".encode()).digest()[:8], "big", signed=True
    )


class _Feed:
    """A feed reads on a connection it keeps (the store's own, or one its SQLAlchemy engine's
    pool lends until :meth:`close`: a replication slot is read through SQL, so an ordinary
    pooled connection serves). When that connection is lost (the server restarted,
    the backend was terminated, a network drop) the call fails once with a
    :class:`~vectorport.exceptions.TransientError` and the next call opens a new one (starting
    the embedded server again when it is down): ``sync --follow`` backs off and goes on from
    its stored position."""

    kind = ""

    def __init__(
        self, store: PgVectorStore, held: tuple[psycopg.Connection[Any], Callable[[], None]], names: _Names
    ) -> None:
        self.store = store
        self.conn, self._give_back = held
        self.names = names
        self.name = names.slot
        self._claimed = False
        self._noted = 0.0

    @contextmanager
    def _session(self) -> Iterator[psycopg.Connection[Any]]:
        """The feed's connection (a new one when the last was lost), its errors mapped."""
        try:
            with pg_errors("capture", self.store._where, self.store.server.password, lost=self._lost):
                if not usable(self.conn):
                    self._give_back()  # an engine's pool drops a lost connection
                    self.conn, self._give_back = self.store.capture.hold()
                    if self._claimed:
                        self._lock()  # the lock went with the lost session
                yield self.conn
        except NotFoundError as exc:
            # the table dropped between the check and a statement naming it: said as the check
            # says it (the position kept), not as a collection to create
            if self._dropped_meanwhile():
                raise self._dropped() from exc
            raise

    def _dropped_meanwhile(self) -> bool:
        try:
            with pg_errors("capture", self.store._where, self.store.server.password):
                if self.conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                    self.conn.rollback()
                return not self.store.capture.table_exists(self.conn)
        except VectorportError:
            return False  # the connection went too: the first error stands

    def _lost(self) -> bool:
        return not usable(self.conn)

    def _check_table(self) -> None:
        """Refuse to read a capture that no longer covers the table: the table dropped, or
        dropped and created again (a new relation the publication or the trigger never saw, so
        none of its changes are in the feed: going on would call a target "synced" that misses
        them)."""
        if not self.store.capture.table_exists(self.conn):
            raise self._dropped()
        if not self._covered(self.store.layout.qualified.object_name(self.conn)):
            if not self.store.capture.table_exists(self.conn):
                raise self._dropped()  # dropped since the first look: no longer covered, and gone
            raise ConfigurationError(
                Advised.of(
                    "{}: the capture {} no longer covers {}.{} (the table was dropped and created "
                    "again, or its capture was altered by hand), so the changes since are not in it; "
                    "the sync position is kept: install the capture again ({}: the next sync scans "
                    "the source)",
                    self.store._where,
                    self.name,
                    self.store.schema,
                    self.store.table,
                    Step(Action.REINSTALL_CAPTURE),
                )
            )

    def _dropped(self) -> ConfigurationError:
        return ConfigurationError(
            Advised.of(
                "{}: the source table was dropped; the sync position is kept: create it again "
                "and install the capture again ({}: the next sync scans the source), or remove "
                "the capture ({}) and sync a new source",
                self.store._where,
                Step(Action.REINSTALL_CAPTURE),
                Step(Action.REMOVE_CAPTURE),
            )
        )

    def _covered(self, table: str) -> bool:
        """Whether the capture's publication or trigger covers ``table`` (this relation)."""
        raise NotImplementedError

    def _note(self) -> dict[str, Any]:
        """The capture's note (its consumer), kept in a comment on its object."""
        raise NotImplementedError

    def _set_note(self, note: dict[str, Any]) -> None:
        raise NotImplementedError

    def owner(self) -> str | None:
        """The consumer the capture feeds (``None`` before a sync read it)."""
        with self._session():
            got = self._note().get("consumer")
        return str(got) if got is not None else None

    def claim(self, consumer: str) -> str | None:
        """Make ``consumer`` the capture's one consumer (recorded on the server) and hold its
        lock until :meth:`close`; return the other consumer that has it instead (nothing held)."""
        with self._session():
            self._check_table()
            note = self._note()
            owner = note.get("consumer")
            if owner is not None and owner != consumer:
                return str(owner)
            self._lock()
            self._claimed = True
            if owner is None:
                self._set_note({**note, "consumer": consumer})
        return None

    def _lock(self) -> None:
        """The capture's advisory lock on the feed's connection: one sync at a time applies a
        capture (two would each confirm what the other has not applied)."""
        key = _lock_key(self.names.slot)
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            row = self.conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row and row[0]:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        holder = self.conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            "AND classid = %s AND objid = %s",
            ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF),
        ).fetchone()
        raise ConfigurationError(
            f"{self.store._where}: another sync is applying the capture {self.name} (PostgreSQL "
            f"session PID {holder[0] if holder else '?'}): one sync at a time follows a capture. "
            "Stop that one first; to keep two targets in step, see 'Two targets' in docs/sync.md"
        )

    def _confirmed(self) -> None:
        """Note the time of a confirmation in the capture's note, at most once a minute (a
        comment is a catalog write): what ``info`` shows as the last confirmation."""
        now = time.time()
        if now - self._noted < NOTE_EVERY:
            return
        self._noted = now
        self._set_note({**self._note(), "confirmed_at": datetime.fromtimestamp(now, UTC).isoformat()})

    def health(self) -> dict[str, Any]:
        """What :meth:`Capture.health` returns."""
        with self._session():
            note = self._note()
            return {
                "method": self.kind,
                "name": self.name,
                "consumer": note.get("consumer"),
                "confirmed_at": note.get("confirmed_at"),
                **self._held_back(),
            }

    def _held_back(self) -> dict[str, Any]:
        raise NotImplementedError

    def shape(self) -> str:
        """A digest of the table's columns and their types: a mark with another shape (a column
        added, a type changed) cannot be gone on from by the changed keys alone."""
        with self._session():
            self._check_table()
            row = self.conn.execute(
                "SELECT md5(string_agg(attname || ' ' || format_type(atttypid, atttypmod), ',' "
                "ORDER BY attnum)) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                "AND NOT attisdropped",
                (self.store.layout.qualified.object_name(self.conn),),
            ).fetchone()
        return str(row[0]) if row else ""

    def close(self) -> None:
        if self._claimed and usable(self.conn):
            # a connection lent by an engine's pool goes back without the lock
            self.conn.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(self.names.slot),))
        self._claimed = False
        self._give_back()


class SlotFeed(_Feed):
    """Changes of a logical replication slot (see the module docstring)."""

    kind = "slot"

    def _covered(self, table: str) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid "
                "WHERE p.pubname = %s AND r.prrelid = to_regclass(%s)",
                (self.names.slot, table),
            ).fetchone()
            is not None
        )

    def _note(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT obj_description(oid, 'pg_publication') FROM pg_publication WHERE pubname = %s",
            (self.names.slot,),
        ).fetchone()
        return _parsed_note(row[0] if row else None)

    def _set_note(self, note: dict[str, Any]) -> None:
        self.conn.execute(
            sql.SQL("COMMENT ON PUBLICATION {} IS {}").format(
                sql.Identifier(self.names.slot), sql.Literal(json.dumps(note))
            )
        )

    def position(self) -> str:
        """The slot's confirmed position (every change before it is applied)."""
        with self._session():
            self._check_table()
            row = self.conn.execute(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                (self.name,),
            ).fetchone()
        if row is None:
            raise ConfigurationError(f"{self.store._where}: the replication slot {self.name} is gone")
        return str(row[0])

    def covered(self, position: str) -> ChangeBatch:
        """Nothing: the slot is read again from its confirmed position after a scan (the
        changes the scan saw are applied again, harmlessly)."""
        return ChangeBatch(position=None)

    def covers(self, position: str) -> bool:
        """Whether the slot holds every change after ``position`` (its confirmed position is
        not past it: a slot created again later starts later)."""
        with self._session():
            row = self.conn.execute(
                "SELECT confirmed_flush_lsn <= %s::pg_lsn FROM pg_replication_slots WHERE slot_name = %s",
                (position, self.name),
            ).fetchone()
        return bool(row and row[0])

    def read(self, limit: int, after: str | None = None) -> ChangeBatch:
        """Up to about ``limit`` changes (whole transactions) past the confirmed position and
        ``after`` (changes up to ``after`` were applied but not confirmed: a kill in between)."""
        skip = lsn_int(after) if after else 0
        with self._session():
            self._check_table()
            self._check_kept()
            rows = self.conn.execute(
                "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes("
                "%s, NULL, %s, 'proto_version', '1', 'publication_names', %s)",
                (self.name, limit, self.name),
            ).fetchall()
            return self._decode(rows, skip)

    def _check_kept(self) -> None:
        """Refuse a slot the server invalidated (it held back more WAL than
        ``max_slot_wal_keep_size``): changes are missing from it."""
        row = self.conn.execute(
            "SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s", (self.name,)
        ).fetchone()
        if row is not None and row[0] == "lost":
            raise ConfigurationError(
                Advised.of(
                    "{}: the replication slot {} was invalidated (it held back more WAL than "
                    "max_slot_wal_keep_size allows), so changes are missing from it; the sync "
                    "position is kept: install the capture again ({}: the next sync scans the source)",
                    self.store._where,
                    self.name,
                    Step(Action.REINSTALL_CAPTURE),
                )
            )

    def _decode(self, rows: list[tuple[str, bytes]], skip: int) -> ChangeBatch:
        """The batch of the peeked ``(lsn, data)`` rows; transactions whose commit precedes
        ``skip`` (an LSN already applied) count for the position only."""
        batch = ChangeBatch(position=None)
        tuples: list[tuple[Relation, list[object]]] = []
        relations: dict[int, Relation] = {}
        begun: datetime | None = None
        applied = False
        for _, data in rows:
            msg = decode(data)
            if isinstance(msg, Begin):
                begun = msg.committed
                # applied before a kill, not confirmed: its commit record starts before the end
                # of the last applied one (a change's own LSN says nothing: transactions interleave)
                applied = msg.final_lsn < skip
            elif isinstance(msg, Relation):
                relations[msg.oid] = msg
                self._check_relation(msg)
            elif isinstance(msg, Change | Truncate) and not applied:
                if batch.oldest is None:
                    batch.oldest = begun
                batch.changes += 1
                if isinstance(msg, Truncate):
                    batch.truncated = True
                    continue
                rel = relations[msg.relation]
                tuples += [(rel, t) for t in (msg.old, msg.new) if t is not None]
            elif isinstance(msg, Commit):
                batch.position = lsn_text(msg.end_lsn)
                batch.newest = msg.committed
        batch.keys = self._keys(tuples)
        return batch

    def _check_relation(self, rel: Relation) -> None:
        """Refuse a change of the vector column's dimension, unless the table is back to the
        collection's (each key is read back as it is now: changes made in between apply)."""
        spec = self.store.spec
        column = self.store.layout.columns.embedding
        for col in rel.columns:
            if col.name == column and col.type_modifier > 0 and col.type_modifier != spec.dimension:
                now = self.conn.execute(
                    "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass AND attname = %s",
                    (self.store.layout.qualified.object_name(self.conn), column),
                ).fetchone()
                if now is not None and now[0] == spec.dimension:
                    continue
                raise ConfigurationError(
                    f"{self.store._where}: the column {column} became vector({col.type_modifier}) and the "
                    f"collection holds {spec.dimension}-dim vectors; a sync cannot apply that change (the "
                    "sync position is kept): sync into a new collection"
                )

    def _keys(self, tuples: list[tuple[Relation, list[object]]]) -> list[str]:
        """The chunk keys of decoded rows, by the layout's own key expression (one query)."""
        if not tuples:
            return []
        layout = self.store.layout
        if layout.columns.plain_key:
            # the key is a text column's own value, as pgoutput sends it: no query needed
            name = layout.columns.key
            keys = (
                next((v for c, v in zip(rel.columns, values, strict=False) if c.name == name), None)
                for rel, values in tuples
            )
            return list(dict.fromkeys(k for k in keys if isinstance(k, str)))
        rows = []
        for rel, values in tuples:
            row: dict[str, object] = {}
            for col, value in zip(rel.columns, values, strict=False):
                if value is UNCHANGED or col.name == layout.columns.embedding:
                    continue
                row[col.name] = (
                    json.loads(value) if col.type_oid in _JSON_TYPES and isinstance(value, str) else value
                )
            rows.append(row)
        found = self.conn.execute(
            sql.SQL("SELECT DISTINCT {} FROM jsonb_populate_recordset(NULL::{}, %s::jsonb) AS t").format(
                layout.columns.key_expr("t"), layout.qualified
            ),
            (json.dumps(rows),),
        ).fetchall()
        return [r[0] for r in found if r[0] is not None]

    def confirm(self, batch: ChangeBatch) -> None:
        """Move the slot's confirmed position to the end of ``batch`` (the target holds it)."""
        if batch.position is None:
            return
        with self._session():
            self.conn.execute(
                "SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (self.name, batch.position)
            )
            self._confirmed()

    def _held_back(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint, "
            "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint, wal_status, "
            "safe_wal_size, current_setting('max_slot_wal_keep_size') "
            "FROM pg_replication_slots WHERE slot_name = %s",
            (self.name,),
        ).fetchone()
        names = (
            "retained_wal_bytes",
            "behind_wal_bytes",
            "wal_status",
            "safe_wal_bytes",
            "max_slot_wal_keep_size",
        )
        return dict(zip(names, row or (None,) * len(names), strict=True))

    def behind(self) -> int:
        """WAL bytes between the slot's confirmed position and the server's current one."""
        with self._session():
            row = self.conn.execute(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint "
                "FROM pg_replication_slots WHERE slot_name = %s",
                (self.name,),
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0


class OutboxFeed(_Feed):
    """Changes recorded by the outbox trigger (see the module docstring)."""

    kind = "outbox"

    def _covered(self, table: str) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM pg_trigger WHERE tgname = %s AND tgrelid = to_regclass(%s)",
                (self.names.trigger, table),
            ).fetchone()
            is not None
        )

    def _note(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT obj_description(to_regclass(%s), 'pg_class')", (self._table.object_name(self.conn),)
        ).fetchone()
        return _parsed_note(row[0] if row else None)

    def _set_note(self, note: dict[str, Any]) -> None:
        self.conn.execute(
            sql.SQL("COMMENT ON TABLE {} IS {}").format(self._table, sql.Literal(json.dumps(note)))
        )

    def __init__(
        self, store: PgVectorStore, held: tuple[psycopg.Connection[Any], Callable[[], None]], names: _Names
    ) -> None:
        super().__init__(store, held, names)
        conn = self.conn
        row = conn.execute("SELECT %s::regclass::oid", (self._table.object_name(conn),)).fetchone()
        # the table's oid: an outbox made again (after a teardown) is another feed
        self.name = f"{names.outbox}@{row[0] if row else 0}"

    def covers(self, position: str) -> bool:
        """Always: applied rows are deleted, so the outbox holds every change not applied."""
        return True

    @property
    def _table(self) -> Identifier:
        return Identifier(self.store.schema, self.names.outbox)

    def position(self) -> str:
        """``ID:XID``: the highest outbox id committed, and the oldest transaction still running
        (its 32-bit id, the snapshot's ``xmin``), read in one snapshot (:meth:`covered`)."""
        with self._session():
            self._check_table()
            row = self.conn.execute(
                sql.SQL(
                    "SELECT coalesce(max(id), 0), "
                    "mod(pg_snapshot_xmin(pg_current_snapshot())::text::bigint, 4294967296) FROM {}"
                ).format(self._table)
            ).fetchone()
        return f"{row[0]}:{row[1]}" if row else "0"

    def covered(self, position: str) -> ChangeBatch:
        """The rows whose changes a scan of the source that began after ``position`` (a
        :meth:`position`) read: the rows up to its id written by transactions that had ended
        when it was taken (an id is drawn at insert, not at commit: a row with a lower id may
        commit later, after the scan read its key, and stays to be applied). Confirming the
        batch trims them, as after a capture pass."""
        top, _, horizon = position.partition(":")
        if not (top.isdigit() and horizon.isdigit()):
            return ChangeBatch(position=None)  # a position without its horizon: trim nothing
        # xmin precedes the horizon in the 32-bit circular order of transaction ids (below 3:
        # the permanent ids of frozen and bootstrap rows, older than any)
        with self._session():
            rows = self.conn.execute(
                sql.SQL(
                    "SELECT id FROM {} WHERE id <= %s AND (xmin::text::bigint < 3 OR "
                    "mod(%s - xmin::text::bigint + 4294967296, 4294967296) BETWEEN 1 AND 2147483647) "
                    "ORDER BY id"
                ).format(self._table),
                (int(top), int(horizon)),
            ).fetchall()
        return ChangeBatch(position=None, ids=[int(r[0]) for r in rows], changes=len(rows))

    def read(self, limit: int, after: str | None = None) -> ChangeBatch:
        """Up to ``limit`` committed outbox rows, oldest first (``after`` is not needed: an
        applied row is deleted in the same step that confirms it)."""
        with self._session():
            self._check_table()
            rows = self.conn.execute(
                sql.SQL("SELECT id, key, op, at FROM {} ORDER BY id LIMIT %s").format(self._table), (limit,)
            ).fetchall()
        batch = ChangeBatch(position=str(rows[-1][0]) if rows else None)
        batch.ids = [int(r[0]) for r in rows]
        batch.changes = len(rows)
        batch.truncated = any(r[2] == "T" for r in rows)
        batch.keys = list(dict.fromkeys(str(r[1]) for r in rows if r[1] is not None))
        if rows:
            batch.oldest = min(r[3] for r in rows)
            batch.newest = max(r[3] for r in rows)
        return batch

    def confirm(self, batch: ChangeBatch) -> None:
        """Delete the applied rows (trimming the outbox)."""
        if not batch.ids:
            return
        with self._session():
            self.conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self._table), (batch.ids,))
            self._confirmed()

    def _held_back(self) -> dict[str, Any]:
        row = self.conn.execute(
            sql.SQL("SELECT count(*), min(at)::text, pg_total_relation_size(%s::regclass) FROM {}").format(
                self._table
            ),
            (self._table.object_name(self.conn),),
        ).fetchone()
        names = ("outbox_rows", "oldest_change_at", "outbox_bytes")
        return dict(zip(names, row or (None,) * len(names), strict=True))

    def behind(self) -> int:
        """Rows waiting in the outbox."""
        with self._session():
            row = self.conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self._table)).fetchone()
        return int(row[0]) if row else 0
