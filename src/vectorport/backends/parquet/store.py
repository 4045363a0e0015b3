"""``parquet:///path/to/DIR``: a snapshot directory (Parquet parts plus ``_manifest.json``, as
``vectorport export`` writes it) opened as a store, so ``vectorport import DIR URL`` is
``vectorport migrate parquet://DIR URL`` (same plan, transforms, checkpoint and verification),
``compare``/``search`` work on a backup as it is, and an application can write to a directory of
Parquet files as to any store.

Writes are copy-on-write by one collaborator (:class:`._writer.SnapshotWriter`): new parts, the
parts that held replaced or deleted keys written again without them, then the manifest replaced
atomically, under an exclusive lock on the directory (one writing process at a time; readers
take no lock). Connecting with ``dimension=`` to an empty or missing directory makes an empty
snapshot; ``drop`` removes it. A store opened with ``expect_digest`` is pinned to that snapshot
and read-only.

The snapshot directory is read by one collaborator (:class:`._snapshot.Snapshot`): it keeps parts
in memory up to :data:`._snapshot.CACHE_BYTES` (parts are bounded by the exporter) and
checks each part's SHA-256 the first time it loads it. ``get`` touches only the parts that hold
its keys: the first ``get`` reads every part's key column once into an index of key hashes (12
bytes per record). Segments ``(i, n)`` are whole parts (parts ``i, i+n, …``) when there are at least ``n``
parts, so parallel readers each read their own files; otherwise they are by key hash
(:func:`vectorport._digest.bin_of`), as for the memory store. Search is exact: every part
is searched and the best ``k`` merged.

Each part's entry in the manifest keeps the fold of its records' digests per key bin, so the
store gives a sync the folds of the whole snapshot without reading a record
(:class:`~vectorport._features.SupportsBinDigests`), and reads the records of chosen bins alone:
per part, its key column picks the rows, and only those become records.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..._base import BaseStore
from ..._capabilities import Capabilities
from ..._cursor import Position, position_field
from ..._digest import BinSums, bin_of, key_hashes
from ..._exact import SearchMatrix
from ..._features import Feature
from ..._models import (
    CollectionSpec,
    Include,
    Match,
    Metric,
    Record,
    ScanPage,
    Vector,
    score_from_distance,
)
from ..._paging import pages, scan_args
from ..._url import StoreURL
from ...exceptions import ConfigurationError, NotFoundError
from ...filters import ALL_OPERATORS, FilterNode, evaluate_many
from .._parts import Forward
from ._format import KEY_BINS, SHA256_PREFIX, Manifest, PartInfo, combine_bins
from ._snapshot import Snapshot
from ._writer import SnapshotWriter

__all__ = ["ParquetStore"]


class ParquetStore(BaseStore[FilterNode]):
    """A snapshot directory (Parquet parts plus ``_manifest.json``), read and written in place.

    >>> import tempfile, vectorport
    >>> from vectorport.snapshot import export
    >>> src = vectorport.connect("memory://doctest-parquet", dimension=2)
    >>> _ = src.upsert([vectorport.Record("a#0", [1, 0], {"lang": "en"}, "hello")])
    >>> folder = tempfile.mkdtemp()
    >>> export("memory://doctest-parquet", folder).count
    1
    >>> snap = vectorport.connect(f"parquet://{folder}")
    >>> snap.get(["a#0"])[0].text
    'hello'
    >>> snap.upsert([vectorport.Record("b#0", [0, 1], {"lang": "fr"}, "salut")]), snap.count()
    (1, 2)
    >>> src.drop(); snap.drop()
    """

    name: ClassVar[str] = "parquet"
    url_params = frozenset({"expect_digest"})
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset(Metric),
        max_dimension=65_536,
        max_write_batch=10_000,
        max_read_batch=10_000,
        max_delete_batch=10_000,
        max_scan_page=1_000,
        exact=True,
        filter_operators=frozenset(ALL_OPERATORS),
        features=frozenset({Feature.NATIVE_COUNT, Feature.WRITE}),
    )

    def __init__(self, url: StoreURL, directory: Path, expect_digest: str | None = None) -> None:
        super().__init__(url, directory.name or str(directory))
        self.directory = directory
        self.snapshot = Snapshot(directory, expect_digest)
        """The directory's manifest, parts and key index (:mod:`._snapshot`)."""
        self.writer = SnapshotWriter(self)
        """Copy-on-write writes under the directory's lock (:mod:`._writer`)."""
        self._hashes: dict[str, npt.NDArray[np.uint32]] = {}
        """Each part file's key hashes (:func:`~vectorport._digest.key_hashes`), in row order."""

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        if self.snapshot.pinned:  # expect_digest: this content and no other
            return replace(declared, features=declared.features - {Feature.WRITE})
        return declared

    @classmethod
    def processes(cls, url: StoreURL, *, writes: bool = False) -> str:
        # read from any process; written by one at a time (the directory's write lock)
        return "one" if writes else "any"

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        """``expect_digest`` (option or URL parameter): the snapshot's digest as export printed it;
        any other snapshot is refused when opened, before a record is read."""
        opts = dict(options)
        expected = opts.pop("expect_digest", None) or url.param("expect_digest")
        if opts:
            raise ConfigurationError(f"parquet:// takes no options but expect_digest=, got {sorted(opts)}")
        raw = (url.host or "") + url.path
        if not raw:
            raise ConfigurationError(
                "parquet:// needs a directory: parquet:///abs/dir or parquet://./rel/dir"
            )
        return cls(url, Path(raw).expanduser(), expected)

    # ------------------------------------------------------------------ the snapshot
    @property
    def manifest(self) -> Manifest:
        return self.snapshot.manifest

    @property
    def digest(self) -> str:
        """The snapshot's digest, ``sha256:`` and the SHA-256 of its manifest (which holds every
        part's SHA-256): what export printed, and what ``expect_digest`` compares."""
        return self.snapshot.digest

    check_integrity = Forward("snapshot", Snapshot.check_integrity)

    # ------------------------------------------------------------------ primitives
    def _describe_collection(self) -> CollectionSpec | None:
        found = self.snapshot.load()
        return None if found is None else found.spec

    def _not_found(self) -> NotFoundError:
        return self.snapshot.missing()

    _create_collection = Forward("writer", SnapshotWriter.create)
    _drop_collection = Forward("writer", SnapshotWriter.drop)
    _write = Forward("writer", SnapshotWriter.write)
    _remove = Forward("writer", SnapshotWriter.remove)

    def list_collections(self) -> list[str]:
        return [self.collection] if self.snapshot.exists() else []

    def _current(self) -> Manifest:
        """The manifest a read works on: read again first when a writer replaced it."""
        self.snapshot.refresh()
        return self.manifest

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        self.snapshot.refresh()
        wanted = pa.array(list(keys), type=pa.string())
        out: list[Record] = []
        for part in self.snapshot.parts_holding(keys):
            hits = pc.is_in(self.snapshot.table(part).column("key"), value_set=wanted)
            rows = np.flatnonzero(hits.to_numpy(zero_copy_only=False)).tolist()
            if rows:
                out.extend(self.snapshot.records(part, rows, include))
        return out

    def _compile_filter(self, where: FilterNode) -> FilterNode:
        return where  # evaluated by the oracle itself

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        current = self._current()
        metric = current.spec.metric
        best: list[tuple[float, str, int, int]] = []
        for index, part in enumerate(current.parts):
            table = self.snapshot.searched(part, metadata=where is not None)
            keys = np.array(table.column("key").to_pylist(), dtype=object)
            rows = None
            if where is not None:
                metas = [json.loads(m) for m in table.column("metadata").to_pylist()]
                rows = np.flatnonzero(evaluate_many(where, metas)).astype(np.int64)
            flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            matrix = SearchMatrix(metric, np.asarray(flat, dtype=np.float32).reshape(len(keys), -1), keys)
            top = matrix.search(vector, k, rows)
            for row, dist in zip(
                top.rows[0, : top.counts[0]], top.distances[0, : top.counts[0]], strict=True
            ):
                best.append((float(dist), str(keys[row]), index, int(row)))
            best = heapq.nsmallest(k, best)
        out = []
        for dist, _key, index, row in best:
            rec = self.snapshot.records(current.parts[index], [row], include)[0]
            out.append(
                Match(
                    rec.key,
                    dist,
                    score_from_distance(metric, dist),
                    rec.metadata if Include.METADATA in include else None,
                    rec.text,
                    None if rec.vector is None else np.asarray(rec.vector, dtype=np.float32),
                )
            )
        return out

    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        parts = self._current().parts
        index = 0 if position is None else position_field(position, "part", int, self.name)
        row = 0 if position is None else position_field(position, "row", int, self.name)
        seg, n = segment
        by_part = n <= len(parts)
        while index < len(parts):
            if by_part and index % n != seg:
                index, row = index + 1, 0
                continue
            size = parts[index].records
            chosen: list[int] = []
            if by_part:
                chosen = list(range(row, min(row + limit, size)))
                row += len(chosen)
            else:
                keys = self.snapshot.keys(parts[index])
                while row < size and len(chosen) < limit:
                    if bin_of(keys[row], n) == seg:
                        chosen.append(row)
                    row += 1
            if chosen:
                kept = self.snapshot.page(parts[index], chosen)
                if len(kept) < len(chosen):  # bytes, not rows, ended the page
                    chosen, row = kept, kept[-1] + 1
                after = {"part": index, "row": row} if row < size else {"part": index + 1, "row": 0}
                done = after["part"] >= len(parts)
                return self.snapshot.records(parts[index], chosen, include), None if done else after
            index, row = index + 1, 0
        return (), None

    def _count(self) -> int:
        return self._current().count

    # ------------------------------------------------------------------ key bins (sync)
    def bin_digests(self, parts: int) -> BinSums | None:
        """The folds every part keeps, summed, in ``gcd(parts, KEY_BINS)`` bins; ``None`` when a
        part keeps none (written before parts kept them) or they are not readable."""
        try:
            packed = combine_bins(p.bins for p in self._current().parts)
            if packed is None:
                return None
            return BinSums.from_sparse(KEY_BINS, packed).folded(math.gcd(parts, KEY_BINS))
        except (ValueError, TypeError):  # a manifest edited by hand: scan instead
            return None

    def scan_bins(
        self,
        parts: int,
        bins: Sequence[int],
        *,
        batch_size: int | None = None,
        include: Iterable[str] | None = None,
        cursor: str | None = None,
    ) -> Iterator[ScanPage]:
        """The records of key bins ``bins`` of ``parts``, part after part (see the module
        docstring); a page's cursor resumes after it."""
        limit, inc, whole, position = scan_args(self, batch_size, include, (0, 1), cursor)
        if not (type(parts) is int and parts >= 1 and all(type(b) is int and 0 <= b < parts for b in bins)):
            raise ConfigurationError(
                f"scan_bins takes bins 0 <= b < parts, got parts={parts!r}, bins={list(bins)!r}"
            )
        if position is not None and position_field(position, "bins", int, self.name) != parts:
            raise ConfigurationError(
                "this parquet scan cursor reads another number of key bins; resume with the bins it came from"
            )
        wanted = np.zeros(parts, dtype=bool)
        wanted[list(bins)] = True
        yield from pages(self, lambda p: self._bins_page(limit, inc, wanted, p), whole, position)

    def _bins_page(
        self,
        limit: int,
        include: frozenset[Include],
        wanted: npt.NDArray[np.bool_],
        position: Position | None,
    ) -> tuple[Sequence[Record], Position | None]:
        current = self._current().parts
        listed = {p.file for p in current}
        self._hashes = {f: h for f, h in self._hashes.items() if f in listed}
        index = 0 if position is None else position_field(position, "part", int, self.name)
        row = 0 if position is None else position_field(position, "row", int, self.name)
        parts = len(wanted)
        while index < len(current):
            rows = np.flatnonzero(wanted[self._key_hashes(current[index]) % parts])
            rows = rows[rows >= row]
            if len(rows):
                chosen = self.snapshot.page(current[index], rows[:limit].tolist())
                more = len(rows) > len(chosen)
                after = {"bins": parts, "part": index + 1, "row": 0}
                if more:
                    after.update(part=index, row=chosen[-1] + 1)
                done = after["part"] >= len(current)
                return self.snapshot.records(current[index], chosen, include), None if done else after
            index, row = index + 1, 0
        return (), None

    def _key_hashes(self, part: PartInfo) -> npt.NDArray[np.uint32]:
        found = self._hashes.get(part.file)
        if found is None:
            found = self._hashes[part.file] = key_hashes(self.snapshot.keys(part))
        return found

    def info(self) -> dict[str, Any]:
        out = super().info()
        m = self._current()
        out["snapshot"] = {
            "parts": len(m.parts),
            "digest": m.digest,
            "snapshot_digest": SHA256_PREFIX + self.snapshot.sha256,
            "source": m.source,
            "source_layout": m.source_layout,
            "created": m.created,
        }
        return out
