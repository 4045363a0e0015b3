"""A decoder of ``pgoutput``'s logical replication messages, protocol version 1.

The format is PostgreSQL's ("Logical Replication Message Formats" in its documentation): one
message per row of ``pg_logical_slot_peek_binary_changes(slot, …, 'proto_version', '1',
'publication_names', pub)``, its first byte the kind. Integers are big-endian, strings end with
a zero byte, LSNs are 64-bit, timestamps microseconds since 2000-01-01 UTC. Decoded here: Begin
``B``, Commit ``C``, Relation ``R``, Insert ``I``, Update ``U``, Delete ``D``, Truncate ``T``;
Origin ``O``, Type ``Y`` and Message ``M`` are skipped (they name nothing sync needs).

A tuple is a list of column values in the relation's column order, each ``None`` (SQL NULL),
:data:`UNCHANGED` (a TOASTed value an update did not change, which pgoutput does not resend)
or the value's text form.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

__all__ = [
    "UNCHANGED",
    "Begin",
    "Change",
    "Column",
    "Commit",
    "Relation",
    "Truncate",
    "decode",
    "lsn_int",
    "lsn_text",
]

UNCHANGED = object()
"""A column pgoutput did not send: a TOASTed value the update left as it was."""
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_FORMATS: dict[str, struct.Struct] = {}
"""Compiled big-endian formats by spec: a follower decodes every column of every change, and
``struct.unpack_from`` with a format string parses the string each time."""


def lsn_int(text: str) -> int:
    """``'0/18C06B0'`` → the 64-bit LSN."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def lsn_text(value: int) -> str:
    """The 64-bit LSN as PostgreSQL prints it (``0/18C06B0``)."""
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


@dataclass(frozen=True)
class Column:
    name: str
    type_oid: int
    type_modifier: int
    key: bool
    """Part of the replica identity (what a delete's old tuple holds without ``FULL``)."""


@dataclass(frozen=True)
class Relation:
    oid: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Begin:
    final_lsn: int
    committed: datetime
    xid: int


@dataclass(frozen=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    committed: datetime


@dataclass(frozen=True)
class Change:
    """An insert (``I``), update (``U``) or delete (``D``) of one row of ``relation``."""

    op: str
    relation: int
    new: list[object] | None = None
    old: list[object] | None = None
    """The old row: its replica identity columns (others ``None``), or all with ``FULL``."""


@dataclass(frozen=True)
class Truncate:
    relations: tuple[int, ...] = field(default_factory=tuple)


Message = Begin | Commit | Relation | Change | Truncate | None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int:
        compiled = _FORMATS.get(fmt)
        if compiled is None:
            compiled = _FORMATS[fmt] = struct.Struct(fmt)
        (value,) = compiled.unpack_from(self.data, self.at)
        self.at += compiled.size
        return int(value)

    def byte(self) -> str:
        value = self.data[self.at : self.at + 1].decode("ascii")
        self.at += 1
        return value

    def string(self) -> str:
        end = self.data.index(b"\0", self.at)
        value = self.data[self.at : end].decode("utf-8")
        self.at = end + 1
        return value

    def stamp(self) -> datetime:
        return _EPOCH + timedelta(microseconds=self.take(">q"))

    def tuple_data(self) -> list[object]:
        values: list[object] = []
        for _ in range(self.take(">H")):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED)
            elif kind in ("t", "b"):
                size = self.take(">I")
                raw = self.data[self.at : self.at + size]
                self.at += size
                values.append(raw.decode("utf-8") if kind == "t" else raw)
            else:
                raise ValueError(f"pgoutput: unknown tuple column kind {kind!r}")
        return values


def _relation(r: _Reader) -> Relation:
    oid = r.take(">I")
    namespace, name = r.string(), r.string()
    identity = chr(r.take(">B"))
    columns = []
    for _ in range(r.take(">H")):
        flags = r.take(">B")
        columns.append(Column(r.string(), r.take(">I"), r.take(">i"), bool(flags & 1)))
    return Relation(oid, namespace or "pg_catalog", name, identity, tuple(columns))


def _change(kind: str, r: _Reader) -> Change:
    oid = r.take(">I")
    old: list[object] | None = None
    new: list[object] | None = None
    marker = r.byte()
    if marker in ("K", "O"):
        old = r.tuple_data()
        if kind == "D":
            return Change("D", oid, old=old)
        marker = r.byte()
    if marker != "N":
        raise ValueError(f"pgoutput: expected a new tuple in a {kind!r} message, got {marker!r}")
    new = r.tuple_data()
    return Change(kind, oid, new=new, old=old)


def decode(data: bytes) -> Message:
    """One pgoutput message (``None`` for the kinds sync ignores)."""
    r = _Reader(bytes(data))
    kind = r.byte()
    if kind == "B":
        return Begin(r.take(">Q"), r.stamp(), r.take(">I"))
    if kind == "C":
        r.take(">B")  # flags, unused
        return Commit(r.take(">Q"), r.take(">Q"), r.stamp())
    if kind == "R":
        return _relation(r)
    if kind in ("I", "U", "D"):
        return _change(kind, r)
    if kind == "T":
        count = r.take(">I")
        r.take(">B")  # options: CASCADE, RESTART IDENTITY
        return Truncate(tuple(r.take(">I") for _ in range(count)))
    if kind in ("O", "Y", "M"):
        return None
    raise ValueError(f"pgoutput: unknown message kind {kind!r}")
