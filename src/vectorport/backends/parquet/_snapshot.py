"""The snapshot directory a :class:`~.store.ParquetStore` reads: its manifest, its parts (kept in
memory up to :data:`CACHE_BYTES`, each checked by SHA-256 the first time it loads) and an index
of key hashes telling which parts hold a key. A writer (:mod:`._writer`) replaces the manifest
and never changes a part file in place (a part's content gets a new file name), so what is kept
here per file name stays true; :meth:`Snapshot.refresh` reads the manifest again when another
store or process replaced it. Usable alone, without a store:

>>> import tempfile, vectorport
>>> from vectorport.snapshot import export
>>> _ = vectorport.connect("memory://doctest-snapshot", dimension=2).upsert(
...     [vectorport.Record("a#0", [1, 0], {"lang": "en"}, "hello")])
>>> folder = tempfile.mkdtemp()
>>> _ = export("memory://doctest-snapshot", folder)
>>> snap = Snapshot(Path(folder))
>>> snap.manifest.count, [p.file for p in snap.parts_holding(["a#0"])], snap.parts_holding(["nope"])
(1, ['part-00000.parquet'], [])
>>> vectorport.connect("memory://doctest-snapshot").drop()
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from ..._models import Include, Record
from ..._paging import PAGE_BYTES
from ...exceptions import Advised, Call, ConfigurationError, NotFoundError, TransientError
from ._format import (
    MANIFEST,
    SHA256_PREFIX,
    Manifest,
    PartInfo,
    check_contents,
    check_expected,
    check_file,
    check_totals,
    group_starts,
    open_file,
    parse_expected_digest,
    read_columns,
    read_groups,
    read_part,
    records_of,
    row_bytes,
    within,
)

T = TypeVar("T")
__all__ = ["CACHE_BYTES", "Snapshot"]

log = logging.getLogger("vectorport.parquet")

CACHE_BYTES = 256 * 1024 * 1024
"""Parts kept in memory at once (at least one), least recently used first out: scattered
``get`` batches (a verification's) then read each part about once."""


GROUP_CACHE_BYTES = 2 * PAGE_BYTES
"""Row groups kept in memory at once (at least one), least recently used first out: what a
scan holds besides its pages, so a snapshot of large texts is read in bounded memory."""


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
        self._stamp: tuple[int, int, int] | None = None
        """The manifest file's (inode, size, mtime) when it was read: a rename over it changes them."""
        self._cached: OrderedDict[str, pa.Table] = OrderedDict()
        self._searched: OrderedDict[str, pa.Table] = OrderedDict()
        self._groups: OrderedDict[tuple[str, int], pa.Table] = OrderedDict()
        """Row groups read last, by (part file, group): a scan reads a part group by group, and a
        verification's lanes take turns (at most :data:`GROUP_CACHE_BYTES`, at least one)."""
        self._starts: dict[str, npt.NDArray[np.int64]] = {}
        """Each part file's first row per row group (its row count last)."""
        self._checked: set[str] = set()
        self._keys: dict[str, npt.NDArray[np.int64]] = {}
        """Each part file's key hashes, in row order."""
        self._index: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]] | None = None
        self._intact = False
        self.lock = threading.RLock()
        """Held by every read of a store and by its writer's commit: a reader never sees a
        manifest change under it."""

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
            Advised.of(
                "{} holds no snapshot ({} is missing); make one with `{}`",
                self.directory,
                MANIFEST,
                Call("export", ("URL", str(self.directory))),
            )
        )

    @property
    def pinned(self) -> bool:
        """Opened with an expected digest: this snapshot and no other, so it is not written."""
        return self._expected is not None

    def load(self) -> Manifest | None:
        """Read the manifest (``None``: there is none); with an expected digest, refuse another
        snapshot, then check every part against the manifest."""
        with self.lock:
            stamp = self._stat()  # before the read: a replace in between is seen next time
            found = Manifest.read(self.directory)
            if found is None:
                self._adopt(None, "", None)
                return None
            manifest, sha256 = found
            if self._expected is not None:
                check_expected(self.directory, manifest, sha256, self._expected)
            self._adopt(manifest, sha256, stamp)
            if self._expected is not None:
                self.check_integrity()
            return manifest

    def refresh(self) -> None:
        """Read the manifest again if it was replaced since it was read (a write by another
        store or process); one ``stat``."""
        with self.lock:
            if self._manifest is not None and self._stat() != self._stamp:
                self.load()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.directory / MANIFEST)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _adopt(self, manifest: Manifest | None, sha256: str, stamp: tuple[int, int, int] | None) -> None:
        if sha256 != self.sha256:
            self._index, self._intact = None, False
        self._manifest, self.sha256, self._stamp = manifest, sha256, stamp
        files = {p.file for p in manifest.parts} if manifest is not None else set()
        for cache in (self._cached, self._searched):
            for name in [n for n in cache if n not in files]:
                del cache[name]
        self._checked &= files
        self._keys = {n: k for n, k in self._keys.items() if n in files}
        self._starts = {n: s for n, s in self._starts.items() if n in files}
        for held in [g for g in self._groups if g[0] not in files]:
            del self._groups[held]

    def check_integrity(self) -> None:
        """Check every part against the manifest before a migration (``import``) writes anything:
        each file's size and SHA-256, each part's content digest recomputed from its records (so an
        edit with a matching SHA-256 is still caught), finite vectors, and the manifest's count
        and digest against its parts. Reads are lazy otherwise (a ``get`` opens only the parts
        holding its keys, checked by SHA-256); this reads everything once."""
        with self.lock:
            if self._intact:
                return
            m = self.manifest
            check_totals(self.directory, m)
            for part in m.parts:
                # group by group: a part of large texts is never resident whole
                groups = read_groups(self.directory, part, m.dimension, check=True)
                check_contents(self.directory, part, groups, m.dimension)
                self._checked.add(part.file)
            self._intact = True
            if self._expected is None:
                log.warning(
                    "snapshot %s is unpinned: it agrees with its own manifest, which whoever edits "
                    "it can rewrite too; to take only the snapshot export made, pass "
                    "--expect-digest (expect_digest=) with the digest export printed (this one's is %s)",
                    self.directory,
                    SHA256_PREFIX + self.sha256,
                )

    def part(self, index: int) -> pa.Table:
        """Part ``index`` as one Arrow table (read and checked on first use)."""
        return self.table(self.manifest.parts[index])

    def table(self, part: PartInfo) -> pa.Table:
        """A part of the manifest as one Arrow table (read and checked on first use)."""
        with self.lock:
            table = self._cached.get(part.file)
            if table is None:
                table = self._read(part, check=part.file not in self._checked)
                self._checked.add(part.file)
                _keep(self._cached, part.file, table)
            self._cached.move_to_end(part.file)
            return table

    def searched(self, part: PartInfo, *, metadata: bool) -> pa.Table:
        """What a search reads of a part: its keys and vectors (and metadata, for a filter),
        never its texts — a snapshot of large texts is searched in the memory of its vectors."""
        names = ["key", "vector", "metadata"] if metadata else ["key", "vector"]
        with self.lock:
            whole = self._cached.get(part.file)
            if whole is not None:
                return whole.select(names)
            table = self._searched.get(part.file)
            if table is None or (metadata and "metadata" not in table.column_names):
                check = part.file not in self._checked
                table = read_columns(self.directory, part, self.manifest.dimension, names, check=check)
                self._checked.add(part.file)
                _keep(self._searched, part.file, table)
            self._searched.move_to_end(part.file)
            return table.select(names)

    def _read(self, part: PartInfo, *, check: bool) -> pa.Table:
        return self._from_part(
            part, lambda: read_part(self.directory, part, self.manifest.dimension, check=check)
        )

    def _from_part(self, part: PartInfo, read: Callable[[], T]) -> T:
        """``read()`` of ``part``'s file (a whole part, its row groups' starts, one group); a part
        a writer (another store, another process) removed after replacing the manifest, while
        this reader was between the two, makes the call retried (the store's retry) on the new
        manifest."""
        try:
            return read()
        except (NotFoundError, ConfigurationError):  # gone, or gone while it was opened
            self.refresh()
            if self._manifest is not None and part in self._manifest.parts:
                raise
            raise TransientError(
                f"the snapshot {self.directory} was rewritten while it was read ({part.file} is gone); "
                "reading it again"
            ) from None

    def records(
        self, part: PartInfo, rows: Sequence[int] | None, include: frozenset[Include]
    ) -> list[Record]:
        """The records at ``rows`` of ``part`` (all rows for ``None``), with what ``include``
        asks for: read from the one row group holding them when the part is not in memory."""
        table, first = self._holding(part, rows)
        local = None if rows is None else [r - first for r in rows]
        out = records_of(table, local, Include.VECTOR in include, self.manifest.dimension)
        if Include.METADATA not in include or Include.TEXT not in include:
            for rec in out:
                if Include.METADATA not in include:
                    rec.metadata = {}
                if Include.TEXT not in include:
                    rec.text = None
        return out

    def page(self, part: PartInfo, rows: Sequence[int]) -> list[int]:
        """The first of ``rows`` (ascending) of ``part`` in the row group of the first, whose
        texts and metadata fit in :data:`PAGE_BYTES` (at least one): what one scan page reads,
        whatever the records' sizes."""
        chosen = list(rows)
        if not chosen:
            return chosen
        table, first = self._holding(part, chosen[:1])
        chosen = [r for r in chosen if r < first + table.num_rows]
        sizes = row_bytes(table)[[r - first for r in chosen]]
        return chosen[: within(sizes, PAGE_BYTES)]

    def _holding(self, part: PartInfo, rows: Sequence[int] | None) -> tuple[pa.Table, int]:
        """A table holding ``rows`` of ``part`` and the part's row its first row is: the part
        when it is in memory (or the rows span groups), else the row group holding them."""
        with self.lock:
            if rows is None or not len(rows) or part.file in self._cached:
                return self.table(part), 0
            starts = self._starts.get(part.file)
            if starts is None:
                starts = self._starts[part.file] = self._from_part(
                    part, lambda: group_starts(self.directory, part)
                )
            group = int(np.searchsorted(starts, rows[0], side="right")) - 1
            if max(rows) >= starts[group + 1]:
                return self.table(part), 0
            return self._group(part, group), int(starts[group])

    def _group(self, part: PartInfo, group: int) -> pa.Table:
        """Row group ``group`` of ``part`` (read on first use, the part's SHA-256 checked once)."""
        table = self._groups.get((part.file, group))
        if table is None:
            if part.file not in self._checked:
                self._from_part(part, lambda: check_file(self.directory, part))
                self._checked.add(part.file)
            (table,) = self._from_part(
                part, lambda: read_groups(self.directory, part, self.manifest.dimension, [group], check=False)
            )
            self._groups[(part.file, group)] = table
            while len(self._groups) > 1 and sum(t.nbytes for t in self._groups.values()) > GROUP_CACHE_BYTES:
                self._groups.popitem(last=False)
        self._groups.move_to_end((part.file, group))
        return table

    def parts_holding(self, keys: Sequence[str]) -> list[PartInfo]:
        """The parts of the manifest that may hold ``keys`` (a hash collision adds a part, never
        loses one), the parts in memory first: they cost no read."""
        with self.lock:
            parts = self.manifest.parts
            hashes, owners = self._key_index()
            wanted = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
            lo = np.searchsorted(hashes, wanted, side="left")
            hi = np.searchsorted(hashes, wanted, side="right")
            found: set[int] = set()
            for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
                found.update(owners[a:b].tolist())
            return [parts[i] for i in sorted(found, key=lambda i: (parts[i].file not in self._cached, i))]

    def _key_index(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Every key's hash, sorted, and the part holding it; built from the key columns only.
        Python's ``hash`` is stable within this process, which is all an in-memory index needs."""
        with self.lock:
            if self._index is None:
                self._index = self._build_key_index()
            return self._index

    def _build_key_index(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        hashes: list[npt.NDArray[np.int64]] = []
        owners: list[npt.NDArray[np.int32]] = []
        for index, part in enumerate(self.manifest.parts):
            found = self._keys.get(part.file)
            if found is None:
                found = self._keys[part.file] = self._key_hashes(part)
            hashes.append(found)
            owners.append(np.full(len(found), index, dtype=np.int32))
        flat = np.concatenate(hashes) if hashes else np.empty(0, dtype=np.int64)
        order = np.argsort(flat, kind="stable")
        return flat[order], (np.concatenate(owners) if owners else np.empty(0, dtype=np.int32))[order]

    def _key_hashes(self, part: PartInfo) -> npt.NDArray[np.int64]:
        """The hashes of a part's keys (:meth:`keys`)."""
        keys = self.keys(part)
        return np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))

    def keys(self, part: PartInfo) -> list[str]:
        """A part's keys in row order, read from its key column alone (the whole part when it is
        in memory)."""
        if part.file in self._cached:
            keys = self._cached[part.file].column("key").to_pylist()
        else:
            path = self.directory / part.file
            if not path.exists():
                self._read(part, check=True)  # says what is missing
            try:
                with open_file(path) as fh:
                    keys = pq.read_table(fh, columns=["key"]).column("key").to_pylist()
            except (pa.ArrowException, OSError):
                self._read(part, check=True)  # a damaged file, named
                raise
        return list(keys)


def _keep(cache: OrderedDict[str, pa.Table], name: str, table: pa.Table) -> None:
    """Hold ``table`` in ``cache``, dropping the least recently used past :data:`CACHE_BYTES`
    (one is always kept)."""
    cache[name] = table
    while len(cache) > 1 and sum(t.nbytes for t in cache.values()) > CACHE_BYTES:
        cache.popitem(last=False)
