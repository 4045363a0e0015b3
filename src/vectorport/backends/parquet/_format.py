"""The snapshot format: Parquet parts plus ``_manifest.json``, readable by DuckDB, pandas or Spark
as they are.

Each part has four columns: ``key`` (string), ``vector`` (``fixed_size_list<float32>[dim]``, so
DuckDB reads ``FLOAT[dim]``), ``metadata`` (the record's metadata as a JSON string: Parquet has
no type for arbitrary JSON and a struct column would need one schema for every record) and
``text`` (string, null when the record has none). The manifest is written last, so a directory
without one is not a snapshot (an export that did not finish).

Per part the manifest keeps the file's SHA-256 (checked when the part is read) and a content
digest: the XOR of the records' :func:`~vectorport.migrate._digest.record_digest`, order-free,
so parts written by parallel workers fold into one snapshot content digest. It also keeps, per
part, that fold per key bin (``bins``: :data:`KEY_BINS` bins of :func:`~vectorport._digest.bin_of`,
the non-empty ones packed by :meth:`~vectorport._digest.BinSums.to_sparse`), so ``sync`` learns
which bins changed without reading a record; a part written before parts kept them has none
(``null``), and such a snapshot is then scanned whole.

Those checks catch damage and careless edits, but someone who edits records and recomputes
every checksum in the manifest makes a snapshot that agrees with itself. What cannot be forged
is the **snapshot digest**: the SHA-256 of ``_manifest.json``, which holds every part's SHA-256.
Export prints it; an import or verification given it (``expect_digest``) refuses any other
snapshot before reading it. (The content digest can be expected too, but being an XOR of
per-record digests it can be matched on purpose by someone who may alter many records.)
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..._arrow import metadata_json, records_of, records_to_table, schema
from ..._digest import BinSums, bin_of, record_digest
from ..._models import CollectionSpec, Metric, Record
from ..._paging import PAGE_BYTES  # a scan page, and a slice of the integrity check
from ...exceptions import ConfigurationError, NotFoundError

__all__ = [
    "FORMAT",
    "KEY_BINS",
    "LOCK",
    "MANIFEST",
    "Manifest",
    "PartInfo",
    "PartWriter",
    "bins_of",
    "check_contents",
    "check_expected",
    "check_file",
    "check_totals",
    "combine",
    "combine_bins",
    "content_digest",
    "group_starts",
    "parse_expected_digest",
    "read_groups",
    "read_part",
    "records_of",
    "schema",
    "snapshot_file",
    "write_part",
]

FORMAT = "vectorport-snapshot"
VERSION = 1
MANIFEST = "_manifest.json"
"""Underscore first: pyarrow datasets, pandas and Spark skip such files when they read a
directory, so ``pd.read_parquet(DIR)`` sees only the parts."""
LOCK = "_vectorport.lock"
"""The file a writing process locks (:mod:`._lock`); skipped by readers like the manifest."""
DEFAULT_PART_BYTES = 128 * 1024 * 1024
"""A part is closed when its records reach about this many bytes in memory (and on disk,
before compression): the unit a reader holds at once and a parallel reader gets as a task."""
ROW_GROUP = 10_000
KEY_BINS = 4096
"""Key bins a part's ``bins`` fold: a power of two, so a sync state's bins (a power of two too,
:func:`~vectorport._digest.bin_count`) fold from them exactly up to 4,096 (about a million
records), and coarser beyond. 28 bytes a non-empty bin: 112 KiB of manifest for a full part."""


@dataclass(frozen=True)
class PartInfo:
    """One Parquet file of a snapshot, as the manifest lists it."""

    file: str
    records: int
    bytes: int
    sha256: str
    digest: str
    """Hex of the XOR of the part's record digests."""
    bins: str | None = None
    """That XOR (and the count) per key bin, :data:`KEY_BINS` of them, packed
    (:meth:`~vectorport._digest.BinSums.to_sparse`); ``None`` in parts written before."""


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
        """Write the manifest at once: to a temporary file, flushed to disk with the directory
        (so the parts it lists are there first), then renamed over the old one."""
        path = directory / MANIFEST
        tmp = directory / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        _fsync(directory)
        _fsync(tmp)
        os.replace(tmp, path)
        _fsync(directory)
        return path

    @classmethod
    def load(cls, directory: Path) -> Manifest | None:
        """The manifest of ``directory``; ``None`` when there is none."""
        found = cls.read(directory)
        return None if found is None else found[0]

    @classmethod
    def read(cls, directory: Path) -> tuple[Manifest, str] | None:
        """The manifest of ``directory`` and the SHA-256 (hex) of the bytes it was parsed from
        (the snapshot's digest, :func:`check_expected`); ``None`` when there is none."""
        path = directory / MANIFEST
        try:
            with open_file(path) as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the snapshot manifest {path} ({exc.strerror or exc}); check the path "
                "and its permissions"
            ) from None
        return cls._parse(path, raw), hashlib.sha256(raw).hexdigest()

    @classmethod
    def _parse(cls, path: Path, raw: bytes) -> Manifest:
        try:
            data = json.loads(raw.decode("utf-8"))
            if data.pop("format") != FORMAT:
                raise ValueError("not a vectorport snapshot")
            if data.pop("version") != VERSION:
                raise ValueError(f"snapshot format version {VERSION} expected")
            data["parts"] = [PartInfo(**p) for p in data["parts"]]
            manifest = cls(**data)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # (UnicodeDecodeError too)
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


SHA256_PREFIX = "sha256:"


def parse_expected_digest(value: str) -> tuple[str, str]:
    """What a caller expects a snapshot to be: ``("sha256", hex)`` for the snapshot's digest (the
    SHA-256 of its manifest, which holds every part's SHA-256: ``sha256:…`` or 64 hex digits), or
    ``("content", hex)`` for its content digest (32 hex digits, the manifest's ``digest``).

    >>> parse_expected_digest("SHA256:" + "AB" * 32)[0], parse_expected_digest("0f" * 16)[0]
    ('sha256', 'content')
    """
    text = str(value).strip().lower()
    hexpart = text.removeprefix(SHA256_PREFIX)
    if all(c in "0123456789abcdef" for c in hexpart):
        if len(hexpart) == 64:
            return ("sha256", hexpart)
        if len(hexpart) == 32 and not text.startswith(SHA256_PREFIX):
            return ("content", hexpart)
    raise ConfigurationError(
        f"expected snapshot digest {value!r} is not a digest: give the snapshot's digest as export "
        "printed it (sha256: and 64 hex digits; or its 32-hex-digit content digest)"
    )


def check_expected(directory: Path, manifest: Manifest, sha256: str, expected: tuple[str, str]) -> None:
    """The snapshot is the one expected (:func:`parse_expected_digest`), else it is refused before
    anything is read from it. The content digest is only compared with the manifest's here; the
    store then checks every part against the manifest (``check_integrity``)."""
    kind, want = expected
    got = sha256 if kind == "sha256" else manifest.digest
    if got == want:
        return
    shown = (SHA256_PREFIX + got, SHA256_PREFIX + want) if kind == "sha256" else (got, want)
    what = "digest" if kind == "sha256" else "content digest"
    raise ConfigurationError(
        f"the snapshot {directory} is not the one expected: its {what} is {shown[0]}, expected "
        f"{shown[1]} (it was changed after export, or it is another snapshot); no record was read and "
        "nothing was written. Use the snapshot that digest came from, or export again"
    )


def fold(digests: Sequence[str]) -> str:
    """The XOR of hex digests (the digest of their union)."""
    acc = 0
    for d in digests:
        acc ^= int(d, 16)
    return acc.to_bytes(16, "little").hex()


def open_file(path: Path) -> BinaryIO:
    """``path`` opened for reading, refused when it is a symbolic link: a snapshot's manifest and
    parts are files of its own directory, and a link (to a part of another snapshot, to a file
    outside it) would make an import read what the directory does not hold."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise ConfigurationError(
            f"the snapshot file {path} is a symbolic link (to {os.readlink(path)!r}); a snapshot's "
            "manifest and parts must be files of its directory: copy the files themselves (cp -L)"
        ) from None
    return os.fdopen(fd, "rb")


def _sha256(path: Path) -> str:
    with open_file(path) as fh:
        return _digest_of(fh)


def _digest_of(fh: BinaryIO) -> str:
    h = hashlib.sha256()
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
        self._bins = BinSums(KEY_BINS)

    def add(self, records: Sequence[Record]) -> None:
        for rec in records:
            if rec.vector is None:
                raise ConfigurationError(f"record {rec.key!r} was read without its vector; nothing exported")
            vec = np.asarray(rec.vector, dtype=np.float32)
            meta = metadata_json(rec.metadata)
            self._rows.append((rec.key, vec, meta, rec.text))
            digest = record_digest(rec.key, vec, rec.metadata, rec.text)
            self._digest ^= int.from_bytes(digest, "little")
            self._bins.add(bin_of(rec.key, KEY_BINS), digest)
            self._bytes += len(rec.key) + 4 * self.dimension + len(meta) + len(rec.text or "")
            if self._bytes >= self.max_bytes:
                self.flush()

    def flush(self) -> None:
        if not self._rows:
            return
        keys, vectors, metas, texts = zip(*self._rows, strict=True)
        table = records_to_table(keys, vectors, metas, texts, self.dimension)
        name = f"{self.prefix}-{len(self.parts):05d}.parquet"
        digest = self._digest.to_bytes(16, "little").hex()
        self.parts.append(write_part(self.directory, name, table, digest, self._bins.to_sparse()))
        self._rows, self._bytes, self._digest, self._bins = [], 0, 0, BinSums(KEY_BINS)


def write_part(directory: Path, name: str, table: pa.Table, digest: str, bins: str | None) -> PartInfo:
    """Write ``table`` as the part ``name`` of ``directory`` (to a temporary name, flushed to
    disk and renamed when complete) and describe it as the manifest lists it; ``digest``: the
    XOR of its records' digests (:func:`content_digest`), ``bins`` that per key bin
    (:func:`bins_of`, packed; ``None`` when unknown)."""
    tmp = directory / f".{name}.tmp"
    # row groups of at most ROW_GROUP rows and PAGE_BYTES of texts and metadata (at least one
    # row): a reader decodes one group at a time, so large texts never make a whole part resident
    sizes = row_bytes(table)
    with pq.ParquetWriter(tmp, table.schema, compression="zstd") as writer:
        start = 0
        while True:
            stop = start + min(ROW_GROUP, within(sizes[start:], PAGE_BYTES))
            writer.write_table(table.slice(start, stop - start), row_group_size=ROW_GROUP)
            start = stop
            if start >= table.num_rows:
                break
    _fsync(tmp)
    path = directory / name
    os.replace(tmp, path)
    return PartInfo(name, table.num_rows, path.stat().st_size, _sha256(path), digest, bins)


def _fsync(path: Path) -> None:
    """Flush a file (or a directory's entries) to the disk: a manifest must never reach the disk
    before the parts it lists."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def combine(digests: Iterable[str]) -> str:
    """The content digest of parts (or sets of records) put together, as
    :func:`content_digest` writes them: the XOR of their bytes. (The manifest's snapshot-wide
    ``digest`` is :func:`fold`'s, which reads each digest as one big-endian number.)"""
    acc = 0
    for d in digests:
        acc ^= int.from_bytes(bytes.fromhex(d), "little")
    return acc.to_bytes(16, "little").hex()


def bins_of(records: Iterable[Record]) -> BinSums:
    """The records' digests folded per key bin (:data:`KEY_BINS` bins)."""
    sums = BinSums(KEY_BINS)
    for rec in records:
        sums.add(bin_of(rec.key, KEY_BINS), record_digest(rec.key, rec.vector, rec.metadata, rec.text))
    return sums


def combine_bins(packed: Iterable[str | None], removed: BinSums | None = None) -> str | None:
    """The per-bin folds of parts put together (:meth:`~vectorport._digest.BinSums.merge`),
    less the ``removed`` records; ``None`` when a part has none (written before parts kept them)."""
    sums = BinSums(KEY_BINS)
    for text in packed:
        if text is None:
            return None
        sums.merge(BinSums.from_sparse(KEY_BINS, text))
    if removed is not None:
        for s in range(KEY_BINS):
            sums.digests[s] ^= removed.digests[s]
            sums.counts[s] -= removed.counts[s]
    return sums.to_sparse()


def content_digest(records: Iterable[Record]) -> str:
    """The hex XOR of the records' digests: a part's (or a set of records') content digest."""
    acc = 0
    for rec in records:
        acc ^= int.from_bytes(record_digest(rec.key, rec.vector, rec.metadata, rec.text), "little")
    return acc.to_bytes(16, "little").hex()


def snapshot_file(name: str) -> bool:
    """Is ``name`` a file a snapshot writer makes in its directory (the manifest, a part, a
    temporary one, the write lock)? Export's ``overwrite`` and a writer's clean-up remove only
    these."""
    return name in (MANIFEST, f".{MANIFEST}.tmp", LOCK) or (
        name.lstrip(".").startswith("part") and ".parquet" in name
    )


def check_contents(directory: Path, part: PartInfo, tables: Iterable[pa.Table], dimension: int) -> None:
    """Recompute the content digest of a part's records from its data and compare it with the
    manifest's (and so its per-bin folds, where the part keeps them: a sync trusts them to skip
    bins): a part edited and given a matching SHA-256 is still refused. A non-finite vector
    (no backend stores one) is refused here too, so an import fails before its first write."""
    sums = bins_of(rec for table in tables for rec in _checked_records(directory, part, table, dimension))
    total = 0
    for d in sums.digests:
        total ^= d
    if total.to_bytes(16, "little").hex() != part.digest:
        raise ConfigurationError(
            f"the snapshot part {directory / part.file} does not match its manifest: its records' "
            "content digest differs from the manifest's (the data was edited after export); nothing "
            "was written. Restore the snapshot from another copy or re-export it"
        )
    if part.bins is not None and not _same_bins(part.bins, sums):
        raise ConfigurationError(
            f"the snapshot part {directory / part.file} does not match its manifest: its records' "
            "per-bin digests differ from the manifest's (the manifest was edited after export); "
            "nothing was written. Restore the snapshot from another copy or re-export it"
        )


def _checked_records(directory: Path, part: PartInfo, table: pa.Table, dimension: int) -> Iterator[Record]:
    """A part's records, a page of :data:`PAGE_BYTES` at a time, each vector checked finite."""
    sizes = row_bytes(table)
    start = 0
    while start < table.num_rows:
        stop = start + within(sizes[start:], PAGE_BYTES)
        for rec in records_of(table.slice(start, stop - start), None, True, dimension):
            if not np.all(np.isfinite(np.asarray(rec.vector, dtype=np.float32))):
                # a bad input file (exit 2), not a record a target refused: no store takes NaN
                raise ConfigurationError(
                    f"record {rec.key!r} in the snapshot part {directory / part.file} holds a NaN or "
                    "infinite vector; nothing was written. Remove or fix that record at the source and "
                    "export again"
                )
            yield rec
        start = stop


def row_bytes(table: pa.Table) -> npt.NDArray[np.int64]:
    """Each row's bytes of text and metadata (UTF-8), read from the columns' offsets: no copy."""
    total = np.zeros(table.num_rows, dtype=np.int64)
    for name in ("text", "metadata"):
        if name in table.column_names:
            lengths = pc.binary_length(table.column(name)).to_numpy(zero_copy_only=False)
            total += np.nan_to_num(lengths, nan=0).astype(np.int64)
    return total


def within(sizes: npt.NDArray[np.int64], cap: int) -> int:
    """How many of the first rows of ``sizes`` fit in ``cap`` bytes, at least one (when any)."""
    fits = int(np.searchsorted(np.cumsum(sizes), cap, side="right"))
    return max(fits, min(1, len(sizes)))


def _same_bins(packed: object, sums: BinSums) -> bool:
    """Are ``packed`` (a part's ``bins`` as the manifest holds them) the folds ``sums``?"""
    try:
        kept = BinSums.from_sparse(KEY_BINS, packed) if isinstance(packed, str) else None
    except ValueError:
        return False
    return kept is not None and not kept.differing(sums)


def check_totals(directory: Path, manifest: Manifest) -> None:
    """The manifest's count and digest are those of its parts."""
    count = sum(p.records for p in manifest.parts)
    if count != manifest.count or fold([p.digest for p in manifest.parts]) != manifest.digest:
        raise ConfigurationError(
            f"the snapshot manifest {directory / MANIFEST} does not match its parts (count or digest "
            "differs from the parts' total): it was edited after export; nothing was written. "
            "Restore the snapshot from another copy or re-export it"
        )


def _open_part(directory: Path, part: PartInfo, *, check: bool) -> BinaryIO:
    """A part's file opened (never through a symbolic link: :func:`open_file`), after checking it
    against the manifest's size and (with ``check``) SHA-256, positioned at its start."""
    path = directory / part.file
    try:
        fh = open_file(path)
    except FileNotFoundError:
        raise NotFoundError(
            f"the snapshot {directory} lists {part.file} but the file is missing; copy the whole "
            "snapshot directory, or re-export it"
        ) from None
    if os.fstat(fh.fileno()).st_size != part.bytes or (check and _digest_of(fh) != part.sha256):
        fh.close()
        raise ConfigurationError(
            f"the snapshot part {path} does not match its manifest (size or SHA-256 differs): the "
            "file was changed or damaged after export; restore it from another copy or re-export"
        )
    fh.seek(0)
    return fh


def check_file(directory: Path, part: PartInfo) -> None:
    """The part's file has the manifest's size and SHA-256 (read in blocks, nothing kept)."""
    with _open_part(directory, part, check=True):
        pass


def _parquet(directory: Path, part: PartInfo, fh: BinaryIO, dimension: int) -> pq.ParquetFile:
    """The part's Parquet reader, its schema and row count checked against the manifest."""
    path = directory / part.file
    try:
        found = pq.ParquetFile(fh)
    except (pa.ArrowException, OSError) as exc:
        raise ConfigurationError(
            f"the snapshot part {path} is not a readable Parquet file ({exc}); re-export"
        ) from None
    if (
        found.schema_arrow.field("vector").type != pa.list_(pa.float32(), dimension)
        or found.metadata.num_rows != part.records
    ):
        raise ConfigurationError(f"the snapshot part {path} does not have the manifest's shape; re-export")
    return found


def _read(directory: Path, part: PartInfo, read: Callable[[], pa.Table]) -> pa.Table:
    try:
        return read()
    except (pa.ArrowException, OSError) as exc:
        raise ConfigurationError(
            f"the snapshot part {directory / part.file} is not a readable Parquet file ({exc}); re-export"
        ) from None


def read_part(directory: Path, part: PartInfo, dimension: int, *, check: bool = True) -> pa.Table:
    """A part's table, after checking the file against the manifest's size and (with ``check``)
    SHA-256 (one file opened once)."""
    with _open_part(directory, part, check=check) as fh:
        found = _parquet(directory, part, fh, dimension)
        return _read(directory, part, found.read)


def read_columns(
    directory: Path, part: PartInfo, dimension: int, columns: Sequence[str], *, check: bool = True
) -> pa.Table:
    """Only ``columns`` of a part (what a search reads: keys, vectors, metadata — never the
    texts), after the checks of :func:`read_part`."""
    with _open_part(directory, part, check=check) as fh:
        found = _parquet(directory, part, fh, dimension)
        return _read(directory, part, functools.partial(found.read, columns=list(columns)))


def read_groups(
    directory: Path,
    part: PartInfo,
    dimension: int,
    groups: Iterable[int] | None = None,
    *,
    check: bool = True,
) -> Iterator[pa.Table]:
    """A part's row groups ``groups`` (all for ``None``) one at a time, after the checks of
    :func:`read_part`: what a reader holds is one group, never the whole part."""
    with _open_part(directory, part, check=check) as fh:
        found = _parquet(directory, part, fh, dimension)
        for group in range(found.num_row_groups) if groups is None else groups:
            yield _read(directory, part, functools.partial(found.read_row_group, group))


def group_starts(directory: Path, part: PartInfo) -> npt.NDArray[np.int64]:
    """The first row of each row group of a part, and its row count last (from the footer)."""
    with _open_part(directory, part, check=False) as fh:
        meta = pq.ParquetFile(fh).metadata
        counts = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
