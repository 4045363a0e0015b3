"""Writing records to Chroma: a full replace a crash cannot tear, in requests a server takes.

Chroma 1.5 logs each ``add``/``upsert``/``delete`` call in one SQLite transaction and applies
the log to its metadata and HNSW segments afterwards, replaying it after a crash, so one call
lands whole or not at all. Its ``upsert`` merges (a key absent from the new metadata survives,
a ``None`` document keeps the old one) but deletes a metadata key whose new value is ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..._json import json_size
from ..._models import JSON
from ..._validate import Batch

__all__ = ["REQUEST_BYTES", "chroma_metadata", "replace"]

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


def replace(
    coll: Any, part: Batch, op: Callable[[str], AbstractContextManager[None]], request_bytes: int | None
) -> None:
    """Full replace of ``part``'s records, each in one ``upsert`` call (``add`` when none is
    stored yet): every metadata key the stored record has and the new one lacks is sent as
    ``None``. A stored document cannot be dropped that way (Chroma refuses ``chroma:document``
    in metadata, and its log reader panics on a null one), so only records going from a text
    to none are deleted, then added: two calls a crash can come between.

    ``request_bytes`` caps the estimated JSON size of one call (HTTP); ``None`` for embedded.
    """
    fresh = [chroma_metadata(m) for m in part.metadatas]
    with op("upsert"):
        res = coll.get(ids=part.keys, include=["metadatas"])
    stored = {key: meta or {} for key, meta in zip(res["ids"], res["metadatas"], strict=True)}
    textless = [
        key for key, text in zip(part.keys, part.texts, strict=True) if text is None and key in stored
    ]
    dropping: set[str] = set()
    if textless:
        with op("upsert"):
            res = coll.get(ids=textless, include=["documents"])
        dropping = {key for key, doc in zip(res["ids"], res["documents"], strict=True) if doc is not None}
    merged: list[Metadata] = []
    for key, meta in zip(part.keys, fresh, strict=True):
        gone = [name for name in stored.get(key, {}) if meta is None or name not in meta]
        merged.append({**(meta or {}), **dict.fromkeys(gone)} if gone else meta)
    rows = [i for i, key in enumerate(part.keys) if key not in dropping]
    if rows:
        with op("upsert"):
            _send(coll.upsert if stored else coll.add, part, merged, rows, request_bytes)
    if dropping:
        rows = [i for i, key in enumerate(part.keys) if key in dropping]
        with op("upsert"):
            coll.delete(ids=[part.keys[i] for i in rows])
            _send(coll.add, part, fresh, rows, request_bytes)


def _send(
    call: Any, part: Batch, metadatas: Sequence[Metadata], rows: list[int], request_bytes: int | None
) -> None:
    """``add`` or ``upsert`` the records of ``part`` at ``rows``, in calls under ``request_bytes``."""
    for group in _groups(part, metadatas, rows, request_bytes):
        metas = [metadatas[i] for i in group]
        texts = [part.texts[i] for i in group]
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
