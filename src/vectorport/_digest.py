"""Content digests for ``sync``: one per record, folded into one per key bin.

A record's digest covers everything the target stores for it, after the migration's transforms:
its key, its vector as float32 bytes, its metadata as canonical JSON and its text. Two records
with the same digest are the same record (BLAKE2b, 128 bits).

A *bin* is a group of keys by hash (:func:`bin_of`), computed here from the key, never from a
backend's scan segments (``scan(segment=(i, n))``: pgvector hashes with ``hashtextextended``, S3
Vectors by its service), so a bin holds the same keys in the source, the target and the sync
state. (A scan segment is how a store splits one read; a bin is how digests group keys.) A bin's
digest is the XOR of its records' digests plus a count: order-free (scan orders differ between
backends) and updatable one record at a time.

>>> a = record_digest("doc#1", [1.0, 0.0], {"lang": "en"}, "hello")
>>> a == record_digest("doc#1", [1.0, 0.0], {"lang": "en"}, "hello"), len(a)
(True, 16)
>>> a == record_digest("doc#1", [1.0, 0.0], {"lang": "en"}, None)
False
>>> sums = BinSums(4)
>>> sums.add(bin_of("doc#1", 4), a); sums.remove(bin_of("doc#1", 4), a)
>>> sums.digests == [0, 0, 0, 0], sums.counts
(True, [0, 0, 0, 0])
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._models import JSON

__all__ = ["BinSums", "bin_count", "bin_of", "extra_digest", "key_digest", "record_digest"]

RECORDS_PER_BIN = 256
"""Target bin size: a bin whose digest differs costs about this many key reads."""
MIN_BINS = 16
MAX_BINS = 1 << 16


def bin_of(key: str, bins: int) -> int:
    """Bin number of ``key``: CRC-32 of its UTF-8 bytes modulo ``bins`` (stable across processes
    and machines, unlike ``hash()``; sync states and checkpoints on disk rely on it).

    >>> bin_of("doc#1", 16) == bin_of("doc#1", 16) < 16
    True
    """
    return zlib.crc32(key.encode("utf-8")) % bins


def bin_count(records: int) -> int:
    """Bins for a collection of ``records``: a power of two, about
    :data:`RECORDS_PER_BIN` records each, between 16 and 65,536.

    >>> bin_count(0), bin_count(200_000), bin_count(10**9)
    (16, 1024, 65536)
    """
    n = MIN_BINS
    while n < MAX_BINS and n * RECORDS_PER_BIN < records:
        n *= 2
    return n


def _canonical(metadata: dict[str, JSON] | None) -> bytes:
    return json.dumps(
        metadata or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True
    ).encode("utf-8")


def record_digest(
    key: str, vector: Sequence[float] | Any, metadata: dict[str, JSON] | None, text: str | None
) -> bytes:
    """The 16-byte digest of one record as the target will hold it."""
    h = hashlib.blake2b(digest_size=16, person=b"vectorport-rec1")
    for part in (
        key.encode("utf-8"),
        np.ascontiguousarray(vector, dtype="<f4").tobytes(),
        _canonical(metadata),
    ):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    if text is None:
        h.update(b"\x00")
    else:
        h.update(b"\x01")
        h.update(text.encode("utf-8"))
    return h.digest()


def extra_digest(key: str) -> bytes:
    """The digest recorded for a target record that no source record accounts for (found by
    the first sync): unique per key, never equal to a :func:`record_digest`."""
    return hashlib.blake2b(key.encode("utf-8"), digest_size=16, person=b"vectorport-xtra").digest()


def key_digest(key: str) -> bytes:
    """The 16-byte digest of a key alone: folded like record digests, it compares two key sets
    without their content (a listing without vectors against the keys read back)."""
    return hashlib.blake2b(key.encode("utf-8"), digest_size=16, person=b"vectorport-key1").digest()


class BinSums:
    """Per-bin XOR of record digests and record counts, with the bins touched since
    the last :meth:`clean` (so only those are written back)."""

    def __init__(self, parts: int) -> None:
        self.parts = parts
        self.digests = [0] * parts
        self.counts = [0] * parts
        self.dirty: set[int] = set()

    def add(self, seg: int, digest: bytes) -> None:
        self.digests[seg] ^= int.from_bytes(digest, "little")
        self.counts[seg] += 1
        self.dirty.add(seg)

    def remove(self, seg: int, digest: bytes) -> None:
        self.digests[seg] ^= int.from_bytes(digest, "little")
        self.counts[seg] -= 1
        self.dirty.add(seg)

    def load(self, rows: Iterable[tuple[int, bytes, int]]) -> None:
        for seg, digest, n in rows:
            self.digests[seg] = int.from_bytes(digest, "little")
            self.counts[seg] = n

    def rows(self, bins: Iterable[int]) -> list[tuple[int, bytes, int]]:
        return [(s, self.digests[s].to_bytes(16, "little"), self.counts[s]) for s in bins]

    def clean(self) -> set[int]:
        touched, self.dirty = self.dirty, set()
        return touched

    def merge(self, other: BinSums) -> None:
        """Fold ``other``'s records in (the two hold disjoint records)."""
        for s in range(self.parts):
            if other.counts[s]:
                self.digests[s] ^= other.digests[s]
                self.counts[s] += other.counts[s]
                self.dirty.add(s)

    def to_bytes(self) -> bytes:
        """All bins, packed: 16 digest bytes and 8 count bytes each (:meth:`from_bytes`)."""
        out = bytearray()
        for d, n in zip(self.digests, self.counts, strict=True):
            out += d.to_bytes(16, "little") + n.to_bytes(8, "little", signed=True)
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> BinSums:
        if len(data) % 24:
            raise ValueError(f"{len(data)} bytes is not a whole number of bins")
        sums = cls(len(data) // 24)
        for s in range(sums.parts):
            row = data[24 * s : 24 * s + 24]
            sums.digests[s] = int.from_bytes(row[:16], "little")
            sums.counts[s] = int.from_bytes(row[16:], "little", signed=True)
        return sums

    def differing(self, other: BinSums) -> list[int]:
        """Bins whose digest or count differs from ``other``'s."""
        return [
            s
            for s in range(self.parts)
            if self.digests[s] != other.digests[s] or self.counts[s] != other.counts[s]
        ]

    @property
    def total(self) -> int:
        return sum(self.counts)
