"""Writing a snapshot directory in place, copy-on-write, so a crash at any instant leaves the
previous snapshot whole.

A write (an upsert or a delete) never changes a file a reader may hold open. Under the
directory's write lock (:mod:`._lock`) it

1. reads the current manifest (another process may have written since this store last looked);
2. writes the new records as new parts (:class:`._format.PartWriter`), and each part that held a
   replaced or deleted key again, without those rows, under a new name (its content digest is
   the old one XOR the digests of the rows taken out);
3. merges the small parts into one when there are more than :data:`MAX_SMALL_PARTS` of them, so
   many small writes do not leave a directory of tiny files;
4. replaces ``_manifest.json`` atomically (:meth:`._format.Manifest.save`: a temporary file,
   flushed to disk, renamed over the old one): this rename is the commit;
5. removes the parts no longer listed, and any stray file an interrupted write left.

A crash before step 4 leaves the old manifest, which lists only old, untouched parts (the new
files are strays, ignored by readers and removed by the next write); a crash after it leaves
the new snapshot and, at worst, old parts the next write removes. A reader that globs the
directory itself (``DuckDB '…/*.parquet'``, ``pandas.read_parquet(DIR)``) sees exactly the
snapshot whenever no write is under way or was interrupted; the manifest is the truth, as for
``vectorport import`` and ``verify --expect-digest``, which read only what it lists.

The per-part SHA-256 and content digests are those of the files written, so a written snapshot
is checked (``check_integrity``) and pinned (``expect_digest``) exactly as an exported one. A
store opened with ``expect_digest`` is pinned to that snapshot and is not written.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._models import CollectionSpec
from ..._paths import writable_dir
from ..._validate import Batch
from ...exceptions import ConfigurationError, ConflictError, UnsupportedFeatureError
from ._format import (
    LOCK,
    MANIFEST,
    Manifest,
    PartInfo,
    PartWriter,
    bins_of,
    combine,
    combine_bins,
    content_digest,
    fold,
    read_part,
    records_of,
    snapshot_file,
    write_part,
)
from ._lock import WriteLock
from ._snapshot import Snapshot

if TYPE_CHECKING:
    from .store import ParquetStore

__all__ = ["MAX_SMALL_PARTS", "SMALL_PART_BYTES", "SnapshotWriter"]

SMALL_PART_BYTES = 8 << 20
"""A part under this many bytes on disk is small: merged with the others when they are many."""
MAX_SMALL_PARTS = 8
"""At most this many small parts after a write: beyond it they are merged into one (which, past
:data:`SMALL_PART_BYTES`, then stays as it is), so each record is rewritten a bounded number of
times however many small writes come."""


class SnapshotWriter:
    """Creates, writes and drops the snapshot directory of a :class:`~.store.ParquetStore`."""

    def __init__(self, store: ParquetStore) -> None:
        self.store = store

    @property
    def directory(self) -> Path:
        return self.store.directory

    @property
    def snapshot(self) -> Snapshot:
        return self.store.snapshot

    # ------------------------------------------------------------------ lifecycle
    def create(self, spec: CollectionSpec) -> None:
        """An empty snapshot (no parts) of ``spec``'s dimension and metric; the directory is made
        when missing. A snapshot made meanwhile by another writer with the same dimension and
        metric counts as made."""
        self._writable("create a snapshot in")
        with self._locked():
            found = Manifest.load(self.directory)
            if found is not None:
                if (found.dimension, found.metric) != (spec.dimension, spec.metric.value):
                    raise ConflictError(
                        f"{self.directory} already holds a snapshot of {found.dimension} dimensions "
                        f"({found.metric}); nothing was written. Open it as it is, or drop it first"
                    )
                return
            empty = Manifest(
                dimension=spec.dimension,
                metric=spec.metric.value,
                embedding_model=spec.embedding_model,
                name=spec.name,
                count=0,
                digest=fold([]),
                parts=[],
            )
            self._commit(empty, ())

    def drop(self) -> None:
        """Remove the snapshot: its manifest first (from then on there is none), then its parts,
        the files an interrupted write left and the lock; the directory too when nothing else is
        in it. No error when there is no snapshot."""
        if self.snapshot.pinned:
            raise self._pinned("drop")
        if not (self.directory / MANIFEST).exists():
            return
        with self._locked():
            (self.directory / MANIFEST).unlink(missing_ok=True)
            self._sweep(set())
            self.snapshot.load()
        (self.directory / LOCK).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # the user's other files stay, and the directory
            self.directory.rmdir()

    # ------------------------------------------------------------------ records
    def write(self, batch: Batch) -> None:
        """Full-replace upsert of validated, distinct records: one new snapshot."""
        self._change(batch.keys, batch)

    def remove(self, keys: Sequence[str]) -> None:
        """Delete ``keys`` (missing keys are no error): one new snapshot, or none when no key
        was there."""
        self._change(keys, None)

    def _change(self, keys: Sequence[str], batch: Batch | None) -> None:
        self._writable("write to")
        with self._locked():
            current = self.snapshot.load()
            if current is None:
                raise self.snapshot.missing()
            kept, rewritten = self._without(current, keys)
            if batch is None and len(kept) == len(current.parts):
                return  # none of the keys was there
            token = f"part-{time.time_ns():x}{secrets.token_hex(3)}"
            added = rewritten + self._new_parts(current, batch, token)
            parts = self._compacted(current, kept + added, token)
            count, digest = sum(p.records for p in parts), fold([p.digest for p in parts])
            self._commit(replace(current, parts=parts, count=count, digest=digest), parts)

    def _without(self, current: Manifest, keys: Sequence[str]) -> tuple[list[PartInfo], list[PartInfo]]:
        """The parts holding none of ``keys``, and each part that held some written again
        without them (none when nothing is left of it)."""
        wanted = pa.array(list(keys), type=pa.string())
        holding = {p.file for p in self.snapshot.parts_holding(keys)} if keys else set()
        kept: list[PartInfo] = []
        rewritten: list[PartInfo] = []
        for part in current.parts:
            table = self.snapshot.table(part) if part.file in holding else None
            hits = None if table is None else pc.is_in(table.column("key"), value_set=wanted)
            if table is None or hits is None or not pc.any(hits).as_py():
                kept.append(part)
                continue
            gone = np.flatnonzero(hits.to_numpy(zero_copy_only=False)).tolist()
            if len(gone) < table.num_rows:
                out = records_of(table, gone, True, current.dimension)
                digest = combine([part.digest, content_digest(out)])
                bins = combine_bins([part.bins], bins_of(out))
                rest = table.filter(pc.invert(hits))
                name = f"part-{time.time_ns():x}{secrets.token_hex(3)}-r.parquet"
                rewritten.append(write_part(self.directory, name, rest, digest, bins))
        return kept, rewritten

    def _new_parts(self, current: Manifest, batch: Batch | None, token: str) -> list[PartInfo]:
        if batch is None or not len(batch):
            return []
        writer = PartWriter(self.directory, current.dimension, prefix=token)
        writer.add(list(batch.records()))
        writer.flush()
        return list(writer.parts)

    def _compacted(self, current: Manifest, parts: list[PartInfo], token: str) -> list[PartInfo]:
        """``parts``, the small ones merged into one when there are more than
        :data:`MAX_SMALL_PARTS` (the merged part's digest is the XOR of theirs)."""
        small = [p for p in parts if p.bytes < SMALL_PART_BYTES]
        if len(small) <= MAX_SMALL_PARTS:
            return parts
        tables = [read_part(self.directory, p, current.dimension) for p in small]
        merged = write_part(
            self.directory,
            f"{token}-m.parquet",
            pa.concat_tables(tables),
            combine(p.digest for p in small),
            combine_bins(p.bins for p in small),
        )
        return [p for p in parts if p.bytes >= SMALL_PART_BYTES] + [merged]

    def _commit(self, manifest: Manifest, parts: Sequence[PartInfo]) -> None:
        """Replace the manifest (the commit), then remove every file it does not list."""
        manifest.save(self.directory)
        self.snapshot.load()
        self._sweep({p.file for p in parts})

    def _sweep(self, listed: set[str]) -> None:
        """Remove the snapshot files (:func:`._format.snapshot_file`) the manifest does not
        list: replaced parts, and what an interrupted write left; other files are left alone."""
        for path in self.directory.iterdir():
            name = path.name
            if name not in listed and name not in (MANIFEST, LOCK) and snapshot_file(name) and path.is_file():
                path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ guards
    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The directory's write lock, and the snapshot's (no read of this store in between)."""
        with WriteLock(self.directory), self.snapshot.lock:
            yield

    def _writable(self, what: str) -> None:
        if self.snapshot.pinned:
            raise self._pinned(what)
        writable_dir(self.directory, "parquet snapshot directory")
        if not self.directory.is_dir():
            raise ConfigurationError(f"{self.directory} is not a directory; a parquet:// store is one")

    def _pinned(self, what: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(
            f"the snapshot {self.directory} is read-only here: it was opened with expect_digest, "
            f"which pins it to one content, so this store cannot {what} it; nothing was written. "
            "Open parquet://DIR without expect_digest to write"
        )
