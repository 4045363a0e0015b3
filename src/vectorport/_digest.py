"""Content digests for ``sync``: one per record, folded into one per key segment.

A record's digest covers everything the target stores for it, after the migration's transforms:
its key, its vector as float32 bytes, its metadata as canonical JSON and its text. Two records
with the same digest are the same record (BLAKE2b, 128 bits).

Segments are computed here, from the key (:func:`vectorport._segments.segment_of`), never from a
backend's own segmenting (pgvector hashes with ``hashtextextended``, S3 Vectors by its service),
so a segment holds the same keys in the source, the target and the sync state. A segment's
digest is the XOR of its records' digests plus a count: order-free (scan orders differ between
backends) and updatable one record at a time.

>>> a = record_digest("doc#1", [1.0, 0.0], {"lang": "en"}, "hello")
>>> a == record_digest("doc#1", [1.0, 0.0], {"lang": "en"}, "hello"), len(a)
(True, 16)
>>> a == record_digest("doc#1", [1.0, 0.0], {"lang": "en"}, None)
False
>>> sums = SegmentSums(4)
>>> sums.add(segment_of("doc#1", 4), a); sums.remove(segment_of("doc#1", 4), a)
>>> sums.digests == [0, 0, 0, 0], sums.counts
(True, [0, 0, 0, 0])
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._models import JSON
from ._segments import segment_of

__all__ = ["SegmentSums", "extra_digest", "key_digest", "record_digest", "segment_count", "segment_of"]

RECORDS_PER_SEGMENT = 256
"""Target segment size: a segment whose digest differs costs about this many key reads."""
MIN_SEGMENTS = 16
MAX_SEGMENTS = 1 << 16


def segment_count(records: int) -> int:
    """Segments for a collection of ``records``: a power of two, about
    :data:`RECORDS_PER_SEGMENT` records each, between 16 and 65,536.

    >>> segment_count(0), segment_count(200_000), segment_count(10**9)
    (16, 1024, 65536)
    """
    n = MIN_SEGMENTS
    while n < MAX_SEGMENTS and n * RECORDS_PER_SEGMENT < records:
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


class SegmentSums:
    """Per-segment XOR of record digests and record counts, with the segments touched since
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

    def rows(self, segments: Iterable[int]) -> list[tuple[int, bytes, int]]:
        return [(s, self.digests[s].to_bytes(16, "little"), self.counts[s]) for s in segments]

    def clean(self) -> set[int]:
        touched, self.dirty = self.dirty, set()
        return touched

    def merge(self, other: SegmentSums) -> None:
        """Fold ``other``'s records in (the two hold disjoint records)."""
        for s in range(self.parts):
            if other.counts[s]:
                self.digests[s] ^= other.digests[s]
                self.counts[s] += other.counts[s]
                self.dirty.add(s)

    def to_bytes(self) -> bytes:
        """All segments, packed: 16 digest bytes and 8 count bytes each (:meth:`from_bytes`)."""
        out = bytearray()
        for d, n in zip(self.digests, self.counts, strict=True):
            out += d.to_bytes(16, "little") + n.to_bytes(8, "little", signed=True)
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> SegmentSums:
        if len(data) % 24:
            raise ValueError(f"{len(data)} bytes is not a whole number of segments")
        sums = cls(len(data) // 24)
        for s in range(sums.parts):
            row = data[24 * s : 24 * s + 24]
            sums.digests[s] = int.from_bytes(row[:16], "little")
            sums.counts[s] = int.from_bytes(row[16:], "little", signed=True)
        return sums

    def differing(self, other: SegmentSums) -> list[int]:
        """Segments whose digest or count differs from ``other``'s."""
        return [
            s
            for s in range(self.parts)
            if self.digests[s] != other.digests[s] or self.counts[s] != other.counts[s]
        ]

    @property
    def total(self) -> int:
        return sum(self.counts)
