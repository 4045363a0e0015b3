"""The snapshot format: Parquet parts plus ``_manifest.json``, readable by DuckDB, pandas or Spark
as they are.

Each part has four columns: ``key`` (string), ``vector`` (``fixed_size_list<float32>[dim]``, so
DuckDB reads ``FLOAT[dim]``), ``metadata`` (the record's metadata as a JSON string: Parquet has
no type for arbitrary JSON and a struct column would need one schema for every record) and
``text`` (string, null when the record has none). The manifest is written last, so a directory
without one is not a snapshot (an export that did not finish).

Per part the manifest keeps the file's SHA-256 (checked when the part is read) and a content
digest: the XOR of the records' :func:`~vectorport.migrate._digest.record_digest`, order-free,
so parts written by parallel workers fold into one snapshot digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..._arrow import metadata_json, records_of, records_to_table, schema
from ..._digest import record_digest
from ..._models import CollectionSpec, Metric, Record
from ...exceptions import ConfigurationError, NotFoundError

__all__ = [
    "FORMAT",
    "MANIFEST",
    "Manifest",
    "PartInfo",
    "PartWriter",
    "check_contents",
    "check_totals",
    "read_part",
    "records_of",
    "schema",
]

FORMAT = "vectorport-snapshot"
VERSION = 1
MANIFEST = "_manifest.json"
"""Underscore first: pyarrow datasets, pandas and Spark skip such files when they read a
directory, so ``pd.read_parquet(DIR)`` sees only the parts."""
DEFAULT_PART_BYTES = 128 * 1024 * 1024
"""A part is closed when its records reach about this many bytes in memory (and on disk,
before compression): the unit a reader holds at once and a parallel reader gets as a task."""
ROW_GROUP = 10_000


@dataclass(frozen=True)
class PartInfo:
    """One Parquet file of a snapshot, as the manifest lists it."""

    file: str
    records: int
    bytes: int
    sha256: str
    digest: str
    """Hex of the XOR of the part's record digests."""


@dataclass
class Manifest:
    """What a snapshot holds; ``_manifest.json`` in the snapshot directory."""

    dimension: int
    metric: str
    embedding_model: str | None
    name: str
    count: int
    digest: str
    parts: list[PartInfo]
    source: str | None = None
    source_layout: dict[str, Any] | None = None
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    columns: dict[str, str] = field(
        default_factory=lambda: {
            "key": "string",
            "vector": "fixed_size_list<float32>[dimension]",
            "metadata": "string (JSON object)",
            "text": "string or null",
        }
    )

    @property
    def spec(self) -> CollectionSpec:
        return CollectionSpec(self.name, self.dimension, Metric.parse(self.metric), self.embedding_model)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return {"format": FORMAT, "version": VERSION, **out}

    def save(self, directory: Path) -> Path:
        path = directory / MANIFEST
        tmp = directory / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, directory: Path) -> Manifest | None:
        """The manifest of ``directory``; ``None`` when there is none."""
        path = directory / MANIFEST
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(raw)
            if data.pop("format") != FORMAT:
                raise ValueError("not a vectorport snapshot")
            if data.pop("version") != VERSION:
                raise ValueError(f"snapshot format version {VERSION} expected")
            data["parts"] = [PartInfo(**p) for p in data["parts"]]
            manifest = cls(**data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigurationError(
                f"{path} is not a readable vectorport snapshot manifest ({exc}); re-export the snapshot"
            ) from None
        for part in manifest.parts:
            _check_part_name(path, part.file)
        return manifest


def _check_part_name(manifest: Path, name: object) -> None:
    """A part is a plain file name in the snapshot's own directory: a manifest naming
    ``../elsewhere/p.parquet`` or ``/abs/p.parquet`` would make an import read files outside the
    snapshot, so it is refused before any file is opened."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or Path(name).is_absolute()
    ):
        raise ConfigurationError(
            f"{manifest} lists a part {name!r} outside the snapshot directory (a part must be a file "
            "name in that directory, e.g. 'part-00000.parquet'); the manifest was edited: nothing "
            "was read. Restore the snapshot from another copy or re-export it"
        )


def fold(digests: Sequence[str]) -> str:
    """The XOR of hex digests (the digest of their union)."""
    acc = 0
    for d in digests:
        acc ^= int(d, 16)
    return acc.to_bytes(16, "little").hex()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class PartWriter:
    """Writes records into parts of bounded size under ``directory``, named
    ``<prefix>-00000.parquet``, ``<prefix>-00001.parquet`` … Each part is written to a temporary
    name and renamed when complete."""

    def __init__(
        self, directory: Path, dimension: int, *, prefix: str = "part", max_bytes: int = DEFAULT_PART_BYTES
    ) -> None:
        self.directory = directory
        self.dimension = dimension
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.parts: list[PartInfo] = []
        self._rows: list[tuple[str, Any, str, str | None]] = []
        self._bytes = 0
        self._digest = 0

    def add(self, records: Sequence[Record]) -> None:
        for rec in records:
            if rec.vector is None:
                raise ConfigurationError(f"record {rec.key!r} was read without its vector; nothing exported")
            vec = np.asarray(rec.vector, dtype=np.float32)
            meta = metadata_json(rec.metadata)
            self._rows.append((rec.key, vec, meta, rec.text))
            self._digest ^= int.from_bytes(record_digest(rec.key, vec, rec.metadata, rec.text), "little")
            self._bytes += len(rec.key) + 4 * self.dimension + len(meta) + len(rec.text or "")
            if self._bytes >= self.max_bytes:
                self.flush()

    def flush(self) -> None:
        if not self._rows:
            return
        keys, vectors, metas, texts = zip(*self._rows, strict=True)
        table = records_to_table(keys, vectors, metas, texts, self.dimension)
        name = f"{self.prefix}-{len(self.parts):05d}.parquet"
        tmp = self.directory / f".{name}.tmp"
        pq.write_table(table, tmp, row_group_size=ROW_GROUP, compression="zstd")
        os.replace(tmp, self.directory / name)
        path = self.directory / name
        self.parts.append(
            PartInfo(
                name,
                len(self._rows),
                path.stat().st_size,
                _sha256(path),
                self._digest.to_bytes(16, "little").hex(),
            )
        )
        self._rows, self._bytes, self._digest = [], 0, 0


def check_contents(directory: Path, part: PartInfo, table: pa.Table, dimension: int) -> None:
    """Recompute the content digest of a part's records from its data and compare it with the
    manifest's: a part edited and given a matching SHA-256 is still refused. A non-finite vector
    (no backend stores one) is refused here too, so an import fails before its first write."""
    digest = 0
    for rec in records_of(table, None, True, dimension):
        vector = np.asarray(rec.vector, dtype=np.float32)
        if not np.all(np.isfinite(vector)):
            # a bad input file (exit 2), not a record a target refused: no store takes NaN
            raise ConfigurationError(
                f"record {rec.key!r} in the snapshot part {directory / part.file} holds a NaN or "
                "infinite vector; nothing was written. Remove or fix that record at the source and "
                "export again"
            )
        digest ^= int.from_bytes(record_digest(rec.key, vector, rec.metadata, rec.text), "little")
    if digest.to_bytes(16, "little").hex() != part.digest:
        raise ConfigurationError(
            f"the snapshot part {directory / part.file} does not match its manifest: its records' "
            "content digest differs from the manifest's (the data was edited after export); nothing "
            "was written. Restore the snapshot from another copy or re-export it"
        )


def check_totals(directory: Path, manifest: Manifest) -> None:
    """The manifest's count and digest are those of its parts."""
    count = sum(p.records for p in manifest.parts)
    if count != manifest.count or fold([p.digest for p in manifest.parts]) != manifest.digest:
        raise ConfigurationError(
            f"the snapshot manifest {directory / MANIFEST} does not match its parts (count or digest "
            "differs from the parts' total): it was edited after export; nothing was written. "
            "Restore the snapshot from another copy or re-export it"
        )


def read_part(directory: Path, part: PartInfo, dimension: int, *, check: bool = True) -> pa.Table:
    """A part's table, after checking the file against the manifest's size and (with ``check``)
    SHA-256."""
    path = directory / part.file
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise NotFoundError(
            f"the snapshot {directory} lists {part.file} but the file is missing; copy the whole "
            "snapshot directory, or re-export it"
        ) from None
    if size != part.bytes or (check and _sha256(path) != part.sha256):
        raise ConfigurationError(
            f"the snapshot part {path} does not match its manifest (size or SHA-256 differs): the "
            "file was changed or damaged after export; restore it from another copy or re-export"
        )
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ConfigurationError(
            f"the snapshot part {path} is not a readable Parquet file ({exc}); re-export"
        ) from None
    if (
        table.schema.field("vector").type != pa.list_(pa.float32(), dimension)
        or table.num_rows != part.records
    ):
        raise ConfigurationError(f"the snapshot part {path} does not have the manifest's shape; re-export")
    return table
