"""The registry's two queues of writes: the touched-key log (every key written through the
alias since a shadow began, with its sequence: what the backfill re-copies so that it never
overwrites a newer write) and the repair queue (the keys a member missed, re-copied from the
store that served them; an entry's id is the write's sequence, so an older repair never
replaces a newer write)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ._sql import Connection

__all__ = ["Repair", "WriteQueues"]


@dataclass(frozen=True)
class Repair:
    """A key a member missed (its write failed): re-copied from the serving store."""

    id: int
    member: str
    key: str
    attempts: int
    error: str | None


class WriteQueues:
    """The touched-key log and the repair queue of a registry's connection ``conn``."""

    conn: Connection

    # ----------------------------------------------------------------- touched-key log
    def log_writes(self, name: str, keys: Iterable[str], op: str) -> None:
        text = "INSERT INTO vectorport_alias_write (alias, key, op) VALUES (?, ?, ?)"
        self.conn.run([(text, [(name, k, op) for k in keys])], many=True)

    def last_write(self, name: str) -> int:
        """The newest sequence number of the touched-key log (0 when empty)."""
        rows = self.conn.rows("SELECT MAX(seq) FROM vectorport_alias_write WHERE alias = ?", (name,))
        return int(rows[0][0] or 0)

    def written_since(self, name: str, seq: int) -> dict[str, int]:
        """Each key written after ``seq``, with its newest sequence number."""
        rows = self.conn.rows(
            "SELECT key, MAX(seq) FROM vectorport_alias_write WHERE alias = ? AND seq > ? GROUP BY key",
            (name, seq),
        )
        return {k: int(s) for k, s in rows}

    def clear_writes(self, name: str) -> None:
        self.conn.run([("DELETE FROM vectorport_alias_write WHERE alias = ?", (name,))])

    # ----------------------------------------------------------------- repair queue
    def add_repairs(self, name: str, member: str, keys: Iterable[str], error: str) -> None:
        text = (
            "INSERT INTO vectorport_alias_repair (alias, member, key, attempts, error, at) "
            "VALUES (?, ?, ?, 0, ?, ?)"
        )
        now = time.time()
        self.conn.run([(text, [(name, member, k, error, now) for k in keys])], many=True)

    def repairs(self, name: str, limit: int = 500) -> list[Repair]:
        rows = self.conn.rows(
            "SELECT id, member, key, attempts, error FROM vectorport_alias_repair WHERE alias = ? "
            "ORDER BY id LIMIT ?",
            (name, limit),
        )
        return [Repair(int(i), m, k, int(a), e) for i, m, k, a, e in rows]

    def newest_repairs(self, name: str, member: str, keys: Sequence[str]) -> dict[str, int]:
        """Of ``keys``, those queued for ``member``, each with its newest entry's id (the
        sequence of the newest write the member lacks)."""
        rows = self.conn.rows(
            "SELECT key, MAX(id) FROM vectorport_alias_repair WHERE alias = ? AND member = ? GROUP BY key",
            (name, member),
        )
        wanted = set(keys)
        return {k: int(i) for k, i in rows if k in wanted}

    def repair_count(self, name: str) -> int:
        rows = self.conn.rows("SELECT COUNT(*) FROM vectorport_alias_repair WHERE alias = ?", (name,))
        return int(rows[0][0])

    def repaired(self, ids: Sequence[int]) -> None:
        self.conn.run([("DELETE FROM vectorport_alias_repair WHERE id = ?", [(i,) for i in ids])], many=True)

    def repair_failed(self, ids: Sequence[int], error: str) -> None:
        text = "UPDATE vectorport_alias_repair SET attempts = attempts + 1, error = ?, at = ? WHERE id = ?"
        now = time.time()
        self.conn.run([(text, [(error, now, i) for i in ids])], many=True)

    def drop_repairs(self, name: str, member: str) -> None:
        text = "DELETE FROM vectorport_alias_repair WHERE alias = ? AND member = ?"
        self.conn.run([(text, (name, member))])
