"""Wire encodings: JSON that survives ``jsonb`` and the binary COPY stream."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from ..._models import JSON, Vector

__all__ = ["copy_binary", "dumps_json"]


def _dumps_slow(value: Any) -> str:
    if isinstance(value, float):
        text = repr(value)
        if "e+" in text:
            # jsonb stores numbers as numeric and prints 1e+16 as 10000000000000000, which
            # reads back as an int (and 1e300 as an int that is not equal to the float).
            # Positional digits plus ".0" keep the shortest round-trip value and its type.
            return format(Decimal(text), "f") + ".0"
        return text
    if isinstance(value, dict):
        items = (f"{json.dumps(k, ensure_ascii=False)}:{_dumps_slow(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dumps_slow(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def dumps_json(value: JSON) -> str:
    """Compact JSON for a ``jsonb`` parameter or COPY field, such that reading the jsonb back
    gives values equal to ``value`` with the same int/float types."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if "e+" not in text:  # cheap test; a false hit (inside a string) only costs the slow path
        return text
    return _dumps_slow(value)


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)
_NULL = struct.pack("!i", -1)
_FOUR_FIELDS = struct.pack("!h", 4)
_JSONB_VERSION = b"\x01"


def copy_binary(
    keys: Sequence[str],
    vectors: Vector,
    metadatas: Sequence[dict[str, JSON]],
    texts: Sequence[str | None],
) -> bytes:
    """One ``COPY … (key text, embedding vector, metadata jsonb, text text) FROM STDIN
    (FORMAT BINARY)`` stream.

    Vectors go out in pgvector's binary ``vector`` format (``int16 dim, int16 0, float4[dim]``,
    big-endian), converted for the whole batch at once; jsonb as version byte 1 + JSON text.
    """
    n, dim = vectors.shape
    width = 4 * dim
    vec_prefix = struct.pack("!iHH", 4 + width, dim, 0)
    floats = memoryview(vectors.astype(">f4", copy=False).tobytes())
    length = struct.Struct("!i").pack
    out: list[bytes | memoryview] = [_COPY_HEADER]
    append = out.append
    for i in range(n):
        key = keys[i].encode("utf-8")
        meta = _JSONB_VERSION + dumps_json(metadatas[i]).encode("utf-8")
        append(_FOUR_FIELDS)
        append(length(len(key)))
        append(key)
        append(vec_prefix)
        append(floats[i * width : (i + 1) * width])
        append(length(len(meta)))
        append(meta)
        text = texts[i]
        if text is None:
            append(_NULL)
        else:
            raw = text.encode("utf-8")
            append(length(len(raw)))
            append(raw)
    append(_COPY_TRAILER)
    return b"".join(out)
