"""``parquet:///path/to/DIR``: a snapshot written by ``vectorport export``, opened read-only as a
store, so ``vectorport import DIR URL`` is ``vectorport migrate parquet://DIR URL`` (same plan,
transforms, checkpoint and verification) and ``compare``/``search`` work on a backup as it is.

Reads keep parts in memory up to :data:`CACHE_BYTES` (parts are bounded by the exporter) and
check each part's SHA-256 the first time they load it. ``get`` touches only the parts that hold
its keys: the first ``get`` reads every part's key column once into an index of key hashes (12
bytes per record). Segments ``(i, n)`` are whole parts (parts ``i, i+n, …``) when there are at least ``n``
parts, so parallel readers each read their own files; otherwise they are by key hash
(:func:`vectorport._segments.segment_of`), as for the memory store. Search is exact: every part
is searched and the best ``k`` merged.
"""

from __future__ import annotations

import heapq
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..._base import BaseStore
from ..._capabilities import Capabilities
from ..._cursor import Position, position_field
from ..._exact import SearchMatrix
from ..._features import Feature
from ..._models import CollectionSpec, Include, Match, Metric, Record, Vector, score_from_distance
from ..._segments import segment_of
from ..._url import StoreURL
from ..._validate import Batch
from ...exceptions import ConfigurationError, NotFoundError, UnsupportedFeatureError
from ...filters import ALL_OPERATORS, FilterNode, evaluate_many
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

__all__ = ["ParquetStore"]

CACHE_BYTES = 256 * 1024 * 1024
"""Parts kept in memory at once (at least one), least recently used first out: scattered
``get`` batches (a verification's) then read each part about once."""


class ParquetStore(BaseStore[FilterNode]):
    """A read-only snapshot directory (Parquet parts plus ``_manifest.json``).

    >>> import tempfile, vectorport
    >>> from vectorport.snapshot import export
    >>> src = vectorport.connect("memory://doctest-parquet", dimension=2)
    >>> _ = src.upsert([vectorport.Record("a#0", [1, 0], {"lang": "en"}, "hello")])
    >>> folder = tempfile.mkdtemp()
    >>> export("memory://doctest-parquet", folder).count
    1
    >>> vectorport.connect(f"parquet://{folder}").get(["a#0"])[0].text
    'hello'
    >>> src.drop()
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
        features=frozenset({Feature.NATIVE_COUNT}),  # read-only: no WRITE
    )

    def __init__(self, url: StoreURL, directory: Path, expect_digest: str | None = None) -> None:
        super().__init__(url, directory.name or str(directory))
        self.directory = directory
        self._expected = parse_expected_digest(expect_digest) if expect_digest else None
        self._manifest: Manifest | None = None
        self._sha256 = ""
        self._cached: OrderedDict[int, pa.Table] = OrderedDict()
        self._checked: set[int] = set()
        self._index: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]] | None = None
        self._intact = False
        # reads come from several threads at once (a verification's scan lanes and queries)
        self._lock = threading.RLock()

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

    # ------------------------------------------------------------------ reading the snapshot
    @property
    def manifest(self) -> Manifest:
        found = self._manifest or self._load()
        if found is None:
            raise self._not_found()
        return found

    @property
    def digest(self) -> str:
        """The snapshot's digest, ``sha256:`` and the SHA-256 of its manifest (which holds every
        part's SHA-256): what export printed, and what ``expect_digest`` compares."""
        _ = self.manifest  # read once
        return SHA256_PREFIX + self._sha256

    def _load(self) -> Manifest | None:
        """Read the manifest; with an expected digest, refuse another snapshot, then check every
        part against the manifest at once (so the expected content is what every read sees)."""
        with self._lock:
            found = Manifest.read(self.directory)
            if found is None:
                return None
            manifest, self._sha256 = found
            if self._expected is not None:
                check_expected(self.directory, manifest, self._sha256, self._expected)
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

    def _part(self, index: int) -> pa.Table:
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

    def _key_index(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Every key's hash, sorted, and the part holding it; built from the key columns only.
        Python's ``hash`` is stable within this process, which is all an in-memory index needs."""
        with self._lock:
            return self._built_key_index()

    def _built_key_index(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        if self._index is None:
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
            self._index = (
                flat[order],
                (np.concatenate(owners) if owners else np.empty(0, dtype=np.int32))[order],
            )
        return self._index

    def _parts_holding(self, keys: Sequence[str]) -> list[int]:
        """The parts that may hold ``keys`` (a hash collision adds a part, never loses one)."""
        hashes, owners = self._key_index()
        wanted = np.fromiter((hash(k) for k in keys), dtype=np.int64, count=len(keys))
        lo = np.searchsorted(hashes, wanted, side="left")
        hi = np.searchsorted(hashes, wanted, side="right")
        found: set[int] = set()
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
            found.update(owners[a:b].tolist())
        # the parts in memory first: they cost no read
        return sorted(found, key=lambda i: (i not in self._cached, i))

    def _records(self, index: int, rows: Sequence[int] | None, include: frozenset[Include]) -> list[Record]:
        out = records_of(self._part(index), rows, Include.VECTOR in include, self.manifest.dimension)
        if Include.METADATA not in include or Include.TEXT not in include:
            for rec in out:
                if Include.METADATA not in include:
                    rec.metadata = {}
                if Include.TEXT not in include:
                    rec.text = None
        return out

    # ------------------------------------------------------------------ primitives
    def _describe_collection(self) -> CollectionSpec | None:
        found = self._load()
        return None if found is None else found.spec

    def _not_found(self) -> NotFoundError:
        return NotFoundError(
            f"{self.directory} holds no snapshot ({MANIFEST} is missing); make one with "
            "`vectorport export URL DIR`"
        )

    def _read_only(self, what: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            f"parquet:// snapshots are read-only ({what} {self.directory}); nothing was written. "
            "Write a snapshot with `vectorport export URL DIR`"
        )

    def _create_collection(self, spec: CollectionSpec) -> None:
        raise self._read_only("cannot create a collection in")

    def _drop_collection(self) -> None:
        raise self._read_only("cannot drop")

    def list_collections(self) -> list[str]:
        return [self.collection] if (self.directory / MANIFEST).exists() else []

    def _write(self, batch: Batch) -> None:
        raise self._read_only("cannot write to")

    def _remove(self, keys: Sequence[str]) -> None:
        raise self._read_only("cannot delete from")

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        wanted = pa.array(list(keys), type=pa.string())
        out: list[Record] = []
        for index in self._parts_holding(keys):
            hits = pc.is_in(self._part(index).column("key"), value_set=wanted)
            rows = np.flatnonzero(hits.to_numpy(zero_copy_only=False)).tolist()
            if rows:
                out.extend(self._records(index, rows, include))
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
        metric = self.manifest.spec.metric
        best: list[tuple[float, str, int, int]] = []
        for index in range(len(self.manifest.parts)):
            table = self._part(index)
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
            rec = self._records(index, [row], include)[0]
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
        parts = self.manifest.parts
        index = 0 if position is None else position_field(position, "part", int, self.name)
        row = 0 if position is None else position_field(position, "row", int, self.name)
        seg, n = segment
        by_part = n <= len(parts)
        while index < len(parts):
            if by_part and index % n != seg:
                index, row = index + 1, 0
                continue
            table = self._part(index)
            size = table.num_rows
            chosen: list[int] = []
            if by_part:
                chosen = list(range(row, min(row + limit, size)))
                row += len(chosen)
            else:
                keys = table.column("key").to_pylist()
                while row < size and len(chosen) < limit:
                    if segment_of(keys[row], n) == seg:
                        chosen.append(row)
                    row += 1
            if chosen:
                after = {"part": index, "row": row} if row < size else {"part": index + 1, "row": 0}
                done = after["part"] >= len(parts)
                return self._records(index, chosen, include), None if done else after
            index, row = index + 1, 0
        return (), None

    def _count(self) -> int:
        return self.manifest.count

    def info(self) -> dict[str, Any]:
        out = super().info()
        m = self.manifest
        out["snapshot"] = {
            "parts": len(m.parts),
            "digest": m.digest,
            "snapshot_digest": SHA256_PREFIX + self._sha256,
            "source": m.source,
            "source_layout": m.source_layout,
            "created": m.created,
        }
        return out
