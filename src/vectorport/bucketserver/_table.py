"""One index's vectors in memory, and its write-ahead log + snapshot on disk.

Durability: every PutVectors/DeleteVectors batch is appended to ``wal.log`` as one framed
record (length, CRC-32, JSON) and fsynced *before* the server answers, then applied in memory.
When the log grows past a threshold (and on clean shutdown) the whole index is written to
``snapshot.npz.tmp``, fsynced and renamed over ``snapshot.npz`` (``os.replace`` is atomic),
and the log is reset the same way. Records carry sequence numbers and the snapshot records
the last one it contains, so a crash between the two renames replays nothing twice. A torn
record at the end of the log (a crash mid-append, never acknowledged) is cut off on load.
"""

from __future__ import annotations

import base64
import bisect
import json
import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .._digest import key_hashes
from .._exact import SearchMatrix
from .._models import Metric
from ._filter import Columns, FilterNode, evaluate
from ._text import TextField, text_field

__all__ = ["VectorTable", "fsync_dir"]

_FRAME = struct.Struct("<II")
Vectors = npt.NDArray[np.float32]


def fsync_dir(path: Path) -> None:
    """Make a rename or file creation inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def segment_of_keys(keys: list[str], count: int) -> npt.NDArray[np.int64]:
    """Each key's segment: its key bin among ``count`` (:func:`vectorport._digest.key_hashes`,
    stable across restarts)."""
    return (key_hashes(keys) % count).astype(np.int64)


class VectorTable:
    """Vectors, keys and metadata of one index, optionally persisted under ``directory``."""

    def __init__(
        self,
        dimension: int,
        metric: str,
        directory: Path | None = None,
        snapshot_bytes: int = 64 << 20,
    ) -> None:
        self.dimension = dimension
        self.metric = metric
        self.lock = threading.RLock()
        self.keys: list[str] = []
        self.rows: dict[str, int] = {}
        self.metadatas: list[dict[str, Any]] = []
        self.vectors: Vectors = np.empty((0, dimension), np.float32)
        self.dropped = False
        self._sorted: list[str] | None = None
        self._segments: dict[int, npt.NDArray[np.int64]] = {}
        self._columns: Columns | None = None
        self._text: dict[str, TextField] = {}
        self._matrix: SearchMatrix | None = None
        self.directory = directory
        self.snapshot_bytes = snapshot_bytes
        self.seq = 0
        self._wal: Any = None
        self._wal_size = 0
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self._load()

    def __len__(self) -> int:
        return len(self.keys)

    # ------------------------------------------------------------------ writes
    def put(self, keys: list[str], vectors: Vectors, metadatas: list[dict[str, Any]]) -> None:
        """Insert or fully replace ``keys`` (distinct) — logged durably first."""
        with self.lock:
            self._log({"op": "put", "keys": keys, "metas": metadatas, "vec": _b64(vectors)})
            self._apply_put(keys, vectors, metadatas)
            self._maybe_snapshot()

    def delete(self, keys: list[str]) -> None:
        with self.lock:
            if not any(k in self.rows for k in keys):
                return
            self._log({"op": "del", "keys": keys})
            self._apply_delete(keys)
            self._maybe_snapshot()

    def _apply_put(self, keys: list[str], vectors: Vectors, metadatas: list[dict[str, Any]]) -> None:
        new = sum(1 for k in keys if k not in self.rows)
        self._reserve(len(self.keys) + new)
        for i, key in enumerate(keys):
            row = self.rows.get(key)
            if row is None:
                row = len(self.keys)
                self.rows[key] = row
                self.keys.append(key)
                self.metadatas.append(metadatas[i])
            else:
                self.metadatas[row] = metadatas[i]
            self.vectors[row] = vectors[i]
        self._matrix = None
        if new:
            self._sorted = None
            self._segments.clear()
        self._columns = None
        self._text.clear()

    def _apply_delete(self, keys: list[str]) -> None:
        for key in keys:
            row = self.rows.pop(key, None)
            if row is None:
                continue
            last = len(self.keys) - 1
            if row != last:  # move the last row into the hole
                moved = self.keys[last]
                self.keys[row] = moved
                self.rows[moved] = row
                self.metadatas[row] = self.metadatas[last]
                self.vectors[row] = self.vectors[last]
            self.keys.pop()
            self.metadatas.pop()
        self._matrix = None
        self._sorted = None
        self._segments.clear()
        self._columns = None
        self._text.clear()

    def _reserve(self, size: int) -> None:
        cap = self.vectors.shape[0]
        if size <= cap:
            return
        cap = max(size, 16, cap * 2)
        grown = np.empty((cap, self.dimension), np.float32)
        grown[: len(self.keys)] = self.vectors[: len(self.keys)]
        self.vectors = grown
        self._matrix = None

    # ------------------------------------------------------------------ reads
    def sorted_keys(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self.keys)
        return self._sorted

    def segment_ids(self, count: int) -> npt.NDArray[np.int64]:
        ids = self._segments.get(count)
        if ids is None:
            ids = segment_of_keys(self.sorted_keys(), count)
            self._segments[count] = ids
        return ids

    def page(self, after: str | None, limit: int, seg_index: int, seg_count: int) -> tuple[list[str], bool]:
        """Up to ``limit`` keys of a segment after ``after`` in key order; ``True`` when more remain."""
        ordered = self.sorted_keys()
        start = 0 if after is None else bisect.bisect_right(ordered, after)
        if seg_count == 1:
            chosen = ordered[start : start + limit]
            return chosen, start + limit < len(ordered)
        ids = self.segment_ids(seg_count)[start:]
        hits = np.flatnonzero(ids == seg_index)
        chosen = [ordered[start + int(i)] for i in hits[:limit]]
        return chosen, hits.size > limit

    def mask(self, node: FilterNode | None) -> npt.NDArray[np.bool_] | None:
        if node is None:
            return None
        if self._columns is None:
            self._columns = Columns(self.metadatas)
        return evaluate(node, self._columns)

    def text_field(self, key: str) -> TextField:
        """The inverted index of searchable ``key`` (cached until the next write)."""
        field = self._text.get(key)
        if field is None:
            field = self._text[key] = text_field(self.metadatas, key)
        return field

    def search(self, query: Vectors, k: int, node: FilterNode | None) -> list[tuple[int, float]]:
        """Exact top-``k`` rows ``(row, distance)`` among rows matching ``node``, best first,
        ties broken by key (vectorport's one exact search). The filter is applied before
        ranking."""
        n = len(self.keys)
        if n == 0:
            return []
        mask = self.mask(node)
        rows = None if mask is None else np.flatnonzero(mask[:n]).astype(np.int64)
        if self._matrix is None:
            self._matrix = SearchMatrix(Metric.parse(self.metric), self.vectors[:n], self.keys)
        top = self._matrix.search(query, k, rows)
        found = int(top.counts[0])
        return [
            (int(r), float(d)) for r, d in zip(top.rows[0, :found], top.distances[0, :found], strict=True)
        ]

    # ------------------------------------------------------------------ persistence
    def _log(self, record: dict[str, Any]) -> None:
        if self.directory is None:
            return
        self.seq += 1
        record["seq"] = self.seq
        payload = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        frame = _FRAME.pack(len(payload), zlib.crc32(payload)) + payload
        wal = self._wal
        wal.write(frame)
        wal.flush()
        os.fsync(wal.fileno())
        self._wal_size += len(frame)

    def _maybe_snapshot(self) -> None:
        if self.directory is not None and self._wal_size > self.snapshot_bytes:
            self.snapshot()

    def snapshot(self) -> None:
        """Write the whole index atomically and reset the log."""
        directory = self.directory
        if directory is None or self.dropped:
            return
        with self.lock:
            n = len(self.keys)
            meta = json.dumps(
                {"seq": self.seq, "keys": self.keys, "metas": self.metadatas},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode("utf-8")
            tmp = directory / "snapshot.npz.tmp"
            with open(tmp, "wb") as fh:
                np.savez(fh, vectors=self.vectors[:n], meta=np.frombuffer(meta, np.uint8))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, directory / "snapshot.npz")
            fsync_dir(directory)
            self._reset_wal()

    def _reset_wal(self) -> None:
        assert self.directory is not None
        if self._wal is not None:
            self._wal.close()
        tmp = self.directory / "wal.log.tmp"
        with open(tmp, "wb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, self.directory / "wal.log")
        fsync_dir(self.directory)
        self._wal = open(self.directory / "wal.log", "ab")  # noqa: SIM115 - kept open for appends
        self._wal_size = 0

    def _load(self) -> None:
        assert self.directory is not None
        snap = self.directory / "snapshot.npz"
        base_seq = 0
        if snap.exists():
            with np.load(snap, allow_pickle=False) as data:
                vectors = np.asarray(data["vectors"], np.float32)
                meta = json.loads(bytes(data["meta"]).decode("utf-8"))
            base_seq = int(meta["seq"])
            if meta["keys"]:
                self._apply_put(meta["keys"], vectors, meta["metas"])
        self.seq = base_seq
        wal = self.directory / "wal.log"
        good = 0
        if wal.exists():
            raw = wal.read_bytes()
            pos = 0
            while pos + _FRAME.size <= len(raw):
                size, crc = _FRAME.unpack_from(raw, pos)
                payload = raw[pos + _FRAME.size : pos + _FRAME.size + size]
                if len(payload) != size or zlib.crc32(payload) != crc:
                    break  # a torn tail: the write was never acknowledged
                record = json.loads(payload.decode("utf-8"))
                pos += _FRAME.size + size
                good = pos
                if record["seq"] <= base_seq:
                    continue
                self.seq = record["seq"]
                if record["op"] == "put":
                    vecs = np.frombuffer(base64.b64decode(record["vec"]), np.float32).reshape(
                        len(record["keys"]), self.dimension
                    )
                    self._apply_put(record["keys"], vecs, record["metas"])
                else:
                    self._apply_delete(record["keys"])
            if good < len(raw):
                with open(wal, "r+b") as fh:
                    fh.truncate(good)
                    os.fsync(fh.fileno())
        self._wal = open(wal, "ab")  # noqa: SIM115 - kept open for appends
        self._wal_size = good

    def close(self, snapshot: bool = True) -> None:
        with self.lock:
            if snapshot and self._wal_size:
                self.snapshot()
            if self._wal is not None:
                self._wal.close()
                self._wal = None


def _b64(vectors: Vectors) -> str:
    return base64.b64encode(np.ascontiguousarray(vectors, np.float32).tobytes()).decode("ascii")
