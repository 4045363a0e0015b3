"""Writing records to Chroma: a full replace a crash cannot tear, in requests a server takes.

Chroma 1.5 logs each ``add``/``upsert``/``delete`` call in one SQLite transaction and applies
the log to its metadata and HNSW segments afterwards, replaying it after a crash, so one call
lands whole or not at all. Its ``upsert`` merges (a key absent from the new metadata survives,
a ``None`` document keeps the old one) but deletes a metadata key whose new value is ``None``.

An upsert of a stored id also repairs the HNSW neighbours of its point (hnswlib's
``updatePoint``): about 10 ms a record at 128 dimensions on a busy 2-core machine, 3-4x a delete
and an insert of the same records. Inside :meth:`ChromaStore.split_replace` (a caller that writes
again what a crash interrupted: ``sync``) stored records are therefore deleted and written anew,
two calls instead of one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._json import json_size
from ..._models import JSON
from ..._validate import Batch

if TYPE_CHECKING:
    from .store import ChromaStore

__all__ = ["NO_TEXT", "REQUEST_BYTES", "Writer", "chroma_metadata", "replace", "split_text"]

NO_TEXT = "vectorport:no_text"
"""Metadata key marking a record whose text was removed by a replace: Chroma cannot drop a stored
document in one call (its upsert keeps a ``None`` document), so such a record is written in one
``upsert`` with the document ``""`` and this key, and read back with no text and without it."""

# `chroma run` refuses request bodies over 40 MiB (max_payload_size_bytes); a batch of 5,461
# 1,536-dimension vectors alone is 45 MiB. Requests are cut below that, with room to spare.
REQUEST_BYTES = 32 << 20

Metadata = dict[str, Any] | None


def chroma_metadata(meta: dict[str, JSON]) -> Metadata:
    """Chroma's form of a validated metadata dict: ``None`` for ``{}`` (Chroma rejects an empty
    dict) and int/float lists as floats (Chroma wants one element type; validation made sure
    the integers are exact as doubles)."""
    if not meta:
        return None
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if (
            isinstance(value, list)
            and any(isinstance(v, float) for v in value)
            and any(isinstance(v, int) and not isinstance(v, bool) for v in value)
        ):
            value = [float(v) for v in value]
        out[key] = value
    return out


def split_text(meta: Metadata, doc: str | None) -> tuple[dict[str, Any], str | None]:
    """The user's metadata and text of a stored record (the no-text marker taken out)."""
    out = dict(meta or {})
    if out.pop(NO_TEXT, None) is not None:
        return out, None
    return out, doc


@dataclass(frozen=True)
class _Stored:
    """What Chroma holds for a key: metadata, document and vector."""

    meta: dict[str, Any]
    doc: str | None
    vector: Any


def _stored(
    coll: Any, keys: list[str], op: Callable[[str], AbstractContextManager[None]]
) -> dict[str, _Stored]:
    with op("upsert"):
        res = coll.get(ids=keys, include=["metadatas", "documents", "embeddings"])
    vectors = res.get("embeddings")
    return {
        key: _Stored(meta or {}, doc, None if vectors is None else vectors[i])
        for i, (key, meta, doc) in enumerate(zip(res["ids"], res["metadatas"], res["documents"], strict=True))
    }


def _same_vector(stored: Any, new: Any, ulps: int) -> bool:
    """Whether Chroma holds ``new`` already: within the ``ulps`` float32 units in the last place
    its reads may move a vector by (``capabilities.vector_ulps``: writing it again would store
    the same value)."""
    if stored is None:
        return False
    got = np.asarray(stored, dtype=np.float64)
    want = np.asarray(new, dtype=np.float32)
    if got.shape != want.shape:
        return False
    off = np.abs(got - want) / np.spacing(np.maximum(np.abs(want), np.finfo(np.float32).tiny))
    return bool(off.max(initial=0.0) <= ulps)


def _canonical(meta: Metadata) -> str:
    # type-strict: True == 1 and 1.0 == 1 in Python, not in a store
    return json.dumps({k: v for k, v in (meta or {}).items() if v is not None}, sort_keys=True)


def replace(
    coll: Any,
    part: Batch,
    op: Callable[[str], AbstractContextManager[None]],
    request_bytes: int | None,
    *,
    split: bool = False,
    vector_ulps: int = 0,
) -> None:
    """Full replace of ``part``'s records, each in one call: ``upsert`` (``add`` when none is
    stored yet), sending as ``None`` every metadata key the stored record has and the new one
    lacks. A stored document cannot be dropped that way (Chroma's upsert keeps a ``None``
    document, refuses ``chroma:document`` in metadata, and its log reader panics on a null one),
    so a record going from a text to none is upserted with the document ``""`` and the
    ``NO_TEXT`` marker: one call, like every other replace.

    A record whose vector and document Chroma already holds is written by an ``update`` of its
    metadata alone (no HNSW work: 25x cheaper than an upsert of a stored id), or not at all when
    its metadata is the same too.

    ``request_bytes`` caps the estimated JSON size of one call (HTTP); ``None`` for embedded.
    ``vector_ulps``: how far a read vector may be from the written one. With ``split``, the
    other stored records are deleted first and written anew (see the module docstring): a crash
    between the two calls leaves them missing, never merged.
    """
    fresh = [chroma_metadata(m) for m in part.metadatas]
    stored = _stored(coll, part.keys, op)
    merged: list[Metadata] = []
    texts = list(part.texts)
    for i, (key, meta) in enumerate(zip(part.keys, fresh, strict=True)):
        old = stored.get(key)
        if old is not None and texts[i] is None and old.doc is not None:
            meta = {**(meta or {}), NO_TEXT: True}
            texts[i] = ""
        gone = [name for name in (old.meta if old else {}) if meta is None or name not in meta]
        merged.append({**(meta or {}), **dict.fromkeys(gone)} if gone else meta)
    full: list[int] = []
    metadata_only: list[int] = []
    for i, key in enumerate(part.keys):
        old = stored.get(key)
        if old is None or old.doc != texts[i] or not _same_vector(old.vector, part.vectors[i], vector_ulps):
            full.append(i)
        elif _canonical(merged[i]) != _canonical(old.meta):
            metadata_only.append(i)
    if metadata_only:
        with op("upsert"):
            for group in _groups(part, merged, metadata_only, request_bytes):
                coll.update(ids=[part.keys[i] for i in group], metadatas=[merged[i] for i in group])
    replaced = [part.keys[i] for i in full if part.keys[i] in stored]
    if not full:
        return
    with op("upsert"):
        if split and replaced:
            coll.delete(ids=replaced)
            # none of them is stored now: an add, as Chroma's upsert looks every id up first
            # (1.02 against 1.12 ms of CPU a 384-dim record, side by side after a delete)
            _send(coll.add, part, fresh, list(part.texts), full, request_bytes)
        else:
            _send(coll.upsert if replaced else coll.add, part, merged, texts, full, request_bytes)


def _send(
    call: Any,
    part: Batch,
    metadatas: Sequence[Metadata],
    documents: Sequence[str | None],
    rows: list[int],
    request_bytes: int | None,
) -> None:
    """``add`` or ``upsert`` the records of ``part`` at ``rows``, in calls under ``request_bytes``."""
    for group in _groups(part, metadatas, rows, request_bytes):
        metas = [metadatas[i] for i in group]
        texts = [documents[i] for i in group]
        call(
            ids=[part.keys[i] for i in group],
            embeddings=part.vectors[group] if len(group) < len(part) else part.vectors,
            metadatas=metas if any(m is not None for m in metas) else None,
            documents=texts if any(t is not None for t in texts) else None,
        )


def _groups(
    part: Batch, metadatas: Sequence[Metadata], rows: list[int], request_bytes: int | None
) -> Iterator[list[int]]:
    if request_bytes is None:
        yield rows
        return
    # HttpClient sends each vector as base64 of its float32 bytes; the rest is JSON.
    vector = 4 * math.ceil(4 * part.vectors.shape[1] / 3) + 3
    group: list[int] = []
    size = 0
    for i in rows:
        need = vector + json_size(part.keys[i]) + json_size(metadatas[i]) + json_size(part.texts[i]) + 3
        if group and size + need > request_bytes:
            yield group
            group, size = [], 0
        group.append(i)
        size += need
    if group:
        yield group


class Writer:
    """The writes of a :class:`~.store.ChromaStore`: full replaces (:func:`replace`) in calls
    of the client's batch size, and the split replace a caller may ask for."""

    def __init__(self, store: ChromaStore) -> None:
        self.store = store
        self._split = 0

    def write(self, batch: Batch) -> None:
        """Full replace of ``batch``'s records (validated and distinct)."""
        store = self.store
        conn = store.connection
        batch = store.mapping.encode(batch)
        conn.claim_writes()
        coll = conn.collection()
        # A remote server may accept fewer records per call than the local default, and takes
        # request bodies up to a size (replace() cuts requests below it).
        request_bytes = None if conn.path is not None else REQUEST_BYTES
        for part in batch.chunks(conn.batch):
            replace(
                coll,
                part,
                conn.op,
                request_bytes,
                split=self._split > 0,
                vector_ulps=store.capabilities.vector_ulps,
            )

    @contextmanager
    def split_replace(self) -> Iterator[None]:
        """Inside the block, a replace deletes the stored records and writes them anew (3-4x
        faster than Chroma's upsert of stored ids; see :mod:`._write`). A crash between the two
        leaves them missing until written again: for callers that do (``sync``)."""
        self._split += 1
        try:
            yield
        finally:
            self._split -= 1
