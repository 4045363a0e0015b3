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

import base64
import hashlib
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._json import canonical_dumps
from ._models import JSON

__all__ = [
    "BinSums",
    "bin_count",
    "bin_of",
    "extra_digest",
    "key_digest",
    "key_hashes",
    "record_digest",
]

RECORDS_PER_BIN = 256
"""Target bin size: a bin whose digest differs costs about this many key reads."""
READ_RECORDS_PER_BIN = 8
"""Target bin size when the bins whose digest differs are the records a sync pass reads (a
source that keeps per-bin digests): a change costs about this many record reads."""
MIN_BINS = 16
MAX_BINS = 1 << 16


def bin_of(key: str, bins: int) -> int:
    """Bin number of ``key``: CRC-32 of its UTF-8 bytes modulo ``bins`` (stable across processes
    and machines, unlike ``hash()``; sync states and checkpoints on disk rely on it).

    >>> bin_of("doc#1", 16) == bin_of("doc#1", 16) < 16
    True
    """
    return zlib.crc32(key.encode("utf-8")) % bins


def key_hashes(keys: Sequence[str]) -> npt.NDArray[np.uint32]:
    """The hash :func:`bin_of` takes of each of ``keys``, at once (``% bins``: their bins).

    >>> int(key_hashes(["doc#1"])[0] % 16) == bin_of("doc#1", 16)
    True
    """
    return np.fromiter((zlib.crc32(k.encode("utf-8")) for k in keys), dtype=np.uint32, count=len(keys))


def bin_count(records: int, per_bin: int = RECORDS_PER_BIN) -> int:
    """Bins for a collection of ``records``: a power of two, about ``per_bin`` records each
    (:data:`RECORDS_PER_BIN` by default), between 16 and 65,536.

    >>> bin_count(0), bin_count(200_000), bin_count(10**9), bin_count(2_000, per_bin=8)
    (16, 1024, 65536, 256)
    """
    n = MIN_BINS
    while n < MAX_BINS and n * per_bin < records:
        n *= 2
    return n


_LENGTH = struct.Struct("<Q").pack


def record_digest(
    key: str, vector: Sequence[float] | Any, metadata: dict[str, JSON] | None, text: str | None
) -> bytes:
    """The 16-byte digest of one record as the target will hold it."""
    k = key.encode("utf-8")
    v = np.ascontiguousarray(vector, dtype="<f4").tobytes()
    m = canonical_dumps(metadata or {})
    # each part behind its length (8 bytes, little-endian), then a text flag and the text: one
    # update of the whole (a fifth of the cost of one per part), the same digest
    t = b"\x00" if text is None else b"\x01" + text.encode("utf-8")
    h = hashlib.blake2b(digest_size=16, person=b"vectorport-rec1")
    h.update(b"".join((_LENGTH(len(k)), k, _LENGTH(len(v)), v, _LENGTH(len(m)), m, t)))
    return h.digest()


def extra_digest(key: str) -> bytes:
    """The digest recorded for a target record that no source record accounts for (found by
    the first sync): unique per key, never equal to a :func:`record_digest`."""
    return hashlib.blake2b(key.encode("utf-8"), digest_size=16, person=b"vectorport-xtra").digest()


def key_digest(key: str) -> bytes:
    """The 16-byte digest of a key alone: folded like record digests, it compares two key sets
    without their content (a listing without vectors against the keys read back)."""
    return hashlib.blake2b(key.encode("utf-8"), digest_size=16, person=b"vectorport-key1").digest()


_SPARSE = struct.Struct("<Iq")
"""A packed bin's number and record count (its 16 digest bytes follow)."""


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

    def folded(self, parts: int) -> BinSums:
        """The same records in ``parts`` bins, ``parts`` dividing :attr:`parts`: a key's bin
        ``bin_of(key, n)`` is then ``bin_of(key, self.parts) % parts``, so the fold is exact.

        >>> fine = BinSums(8); fine.add(bin_of("doc#1", 8), bytes([1] * 16))
        >>> coarse = BinSums(2); coarse.add(bin_of("doc#1", 2), bytes([1] * 16))
        >>> fine.folded(2).differing(coarse)
        []
        """
        if parts < 1 or self.parts % parts:
            raise ValueError(f"{self.parts} bins do not fold into {parts}")
        out = BinSums(parts)
        for s in range(self.parts):
            out.digests[s % parts] ^= self.digests[s]
            out.counts[s % parts] += self.counts[s]
        return out

    def take(self, other: BinSums, bins: Iterable[int]) -> None:
        """Set ``bins`` to ``other``'s digests and counts (same number of bins)."""
        for s in bins:
            self.digests[s], self.counts[s] = other.digests[s], other.counts[s]
            self.dirty.add(s)

    def to_sparse(self) -> str:
        """The non-empty bins, packed and base64-encoded (:meth:`from_sparse`): small for the
        few bins a small set of records fills, at most 28 bytes a bin.

        >>> sums = BinSums(4096); sums.add(7, bytes([2] * 16))
        >>> BinSums.from_sparse(4096, sums.to_sparse()).differing(sums)
        []
        """
        out = bytearray()
        for s in range(self.parts):
            if self.counts[s] or self.digests[s]:
                out += _SPARSE.pack(s, self.counts[s]) + self.digests[s].to_bytes(16, "little")
        return base64.b64encode(bytes(out)).decode("ascii")

    @classmethod
    def from_sparse(cls, parts: int, text: str) -> BinSums:
        """The bins :meth:`to_sparse` packed, in ``parts`` bins; ``ValueError`` when ``text`` is
        not such a packing."""
        data = base64.b64decode(text.encode("ascii"), validate=True)
        row = _SPARSE.size + 16
        if len(data) % row:
            raise ValueError(f"{len(data)} bytes is not a whole number of packed bins")
        sums = cls(parts)
        for start in range(0, len(data), row):
            s, n = _SPARSE.unpack_from(data, start)
            if not 0 <= s < parts:
                raise ValueError(f"bin {s} is not one of {parts}")
            sums.digests[s] = int.from_bytes(data[start + _SPARSE.size : start + row], "little")
            sums.counts[s] = n
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
