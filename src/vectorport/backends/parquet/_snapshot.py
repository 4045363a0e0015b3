"""The snapshot directory a :class:`~.store.ParquetStore` reads: its manifest, its parts (kept in
memory up to :data:`CACHE_BYTES`, each checked by SHA-256 the first time it loads) and an index
of key hashes telling which parts hold a key. Usable alone, without a store:

>>> import tempfile, vectorport
>>> from vectorport.snapshot import export
>>> _ = vectorport.connect("memory://doctest-snapshot", dimension=2).upsert(
...     [vectorport.Record("a#0", [1, 0], {"lang": "en"}, "hello")])
>>> folder = tempfile.mkdtemp()
>>> _ = export("memory://doctest-snapshot", folder)
>>> snap = Snapshot(Path(folder))
>>> snap.manifest.count, snap.parts_holding(["a#0"]), snap.parts_holding(["nope"])
(1, [0], [])
>>> vectorport.connect("memory://doctest-snapshot").drop()
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from ..._models import Include, Record
from ...exceptions import NotFoundError
from ._format import (
    MANIFEST,
    SHA256_PREFIX,
    Manifest,
    check_contents,
    check_expected,
    check_totals,
    parse_expected_digest,
    read_part,
    records_of,
)

__all__ = ["CACHE_BYTES", "Snapshot"]

CACHE_BYTES = 256 * 1024 * 1024
"""Parts kept in memory at once (at least one), least recently used first out: scattered
``get`` batches (a verification's) then read each part about once."""


class Snapshot:
    """One snapshot directory, read lazily and safely from several threads at once (a
    verification's scan lanes and queries). ``expect_digest``: the snapshot's digest as export
    printed it; any other snapshot is refused when the manifest is read, and every part is then
    checked at once (so the expected content is what every read sees)."""

    def __init__(self, directory: Path, expect_digest: str | None = None) -> None:
        self.directory = directory
        self._expected = parse_expected_digest(expect_digest) if expect_digest else None
        self._manifest: Manifest | None = None
        self.sha256 = ""
        """The SHA-256 of the manifest file (known once it is read)."""
        self._cached: OrderedDict[int, pa.Table] = OrderedDict()
        self._checked: set[int] = set()
        self._index: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]] | None = None
        self._intact = False
        self._lock = threading.RLock()

    @property
    def manifest(self) -> Manifest:
        """The manifest, read once; :class:`NotFoundError` when the directory holds none."""
        found = self._manifest or self.load()
        if found is None:
            raise self.missing()
        return found

    @property
    def digest(self) -> str:
        """``sha256:`` and the SHA-256 of the manifest (which holds every part's SHA-256)."""
        _ = self.manifest  # read once
        return SHA256_PREFIX + self.sha256

    def exists(self) -> bool:
        return (self.directory / MANIFEST).exists()

    def missing(self) -> NotFoundError:
        return NotFoundError(
            f"{self.directory} holds no snapshot ({MANIFEST} is missing); make one with "
            "`vectorport export URL DIR`"
        )

    def load(self) -> Manifest | None:
        """Read the manifest (``None``: there is none); with an expected digest, refuse another
        snapshot, then check every part against the manifest."""
        with self._lock:
            found = Manifest.read(self.directory)
            if found is None:
                return None
            manifest, self.sha256 = found
            if self._expected is not None:
                check_expected(self.directory, manifest, self.sha256, self._expected)
            self._manifest = manifest
            if self._expected is not None:
                self.check_integrity()
            return manifest

    def check_integrity(self) -> None:
        """Check every part against the manifest before a migration (``import``) writes anything:
        each file's size and SHA-256, each part's content digest recomputed from its records (so an
        edit with a matching SHA-256 is still caught), finite vectors, and the manifest's count
        and digest against its parts. Reads are lazy otherwise (a ``get`` opens only the parts
        holding its keys, checked by SHA-256); this reads everything once."""
        with self._lock:
            if self._intact:
                return
            m = self.manifest
            check_totals(self.directory, m)
            for index, part in enumerate(m.parts):
                table = self._cached_part(index)
                check_contents(self.directory, part, table, m.dimension)
            self._intact = True

    def part(self, index: int) -> pa.Table:
        """Part ``index`` as one Arrow table (read and checked on first use)."""
        with self._lock:
            return self._cached_part(index)

    def _cached_part(self, index: int) -> pa.Table:
        table = self._cached.get(index)
        if table is None:
            m = self.manifest
            check = index not in self._checked
            table = read_part(self.directory, m.parts[index], m.dimension, check=check)
            self._checked.add(index)
            self._cached[index] = table
            while len(self._cached) > 1 and sum(t.nbytes for t in self._cached.values()) > CACHE_BYTES:
                self._cached.popitem(last=False)
        self._cached.move_to_end(index)
        return table

    def records(self, index: int, rows: Sequence[int] | None, include: frozenset[Include]) -> list[Record]:
        """The records at ``rows`` of part ``index`` (all rows for ``None``), with what
        ``include`` asks for."""
        out = records_of(self.part(index), rows, Include.VECTOR in include, self.manifest.dimension)
        if Include.METADATA not in include or Include.TEXT not in include:
            for rec in out:
                if Include.METADATA not in include:
                    rec.metadata = {}
                if Include.TEXT not in include:
                    rec.text = None
        return out

    def parts_holding(self, keys: Sequence[str]) -> list[int]:
        """The parts that may hold ``keys`` (a hash collision adds a part, never loses one), the
        parts in memory first: they cost no read."""
        hashes, owners = self._key_index()
        wanted = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        lo = np.searchsorted(hashes, wanted, side="left")
        hi = np.searchsorted(hashes, wanted, side="right")
        found: set[int] = set()
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
            found.update(owners[a:b].tolist())
        return sorted(found, key=lambda i: (i not in self._cached, i))

    def _key_index(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Every key's hash, sorted, and the part holding it; built from the key columns only.
        Python's ``hash`` is stable within this process, which is all an in-memory index needs."""
        with self._lock:
            if self._index is None:
                self._index = self._build_key_index()
            return self._index

    def _build_key_index(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        hashes: list[npt.NDArray[np.int64]] = []
        owners: list[npt.NDArray[np.int32]] = []
        for index, part in enumerate(self.manifest.parts):
            path = self.directory / part.file
            if not path.exists():
                read_part(self.directory, part, self.manifest.dimension)  # says what is missing
            try:
                keys = pq.read_table(path, columns=["key"]).column("key").to_pylist()
            except (pa.ArrowException, OSError):
                read_part(self.directory, part, self.manifest.dimension)  # a damaged file, named
                raise
            hashes.append(np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys)))
            owners.append(np.full(len(keys), index, dtype=np.int32))
        flat = np.concatenate(hashes) if hashes else np.empty(0, dtype=np.int64)
        order = np.argsort(flat, kind="stable")
        return flat[order], (np.concatenate(owners) if owners else np.empty(0, dtype=np.int32))[order]
