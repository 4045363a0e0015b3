"""Wire encodings: JSON that survives ``jsonb``, the binary COPY stream, and psycopg adapters for
pgvector's ``vector`` and ``halfvec`` types.

The adapters are vectorport's own rather than pgvector-python's: langchain-postgres and vecs pin
that package below 0.4, whose loaders return other types than 0.4's, and vectorport must install
beside them. Both types load as float32 numpy arrays; a numpy array parameter is sent as a binary
``vector``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, TypeVar, cast

import numpy as np
import psycopg
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import AdaptersMap, Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg.types.json import set_json_loads

from ..._json import fast_dumps, fast_loads
from ..._models import JSON, Vector

__all__ = [
    "aregister_vector_types",
    "avector_cursors",
    "copy_binary",
    "dumps_json",
    "register_vector_types",
    "vector_cursors",
]

C = TypeVar("C", bound=psycopg.Cursor[Any] | psycopg.AsyncCursor[Any])


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


def _dumps_jsonb(value: JSON) -> bytes:
    """:func:`dumps_json` as UTF-8, written by orjson where it is the same JSON (most metadata:
    no float spelled with ``e+``, no NaN or infinity, which json refuses here)."""
    out = fast_dumps(value)
    if b"e+" not in out and b"NaN" not in out and b"Infinity" not in out:
        return out
    return dumps_json(value).encode("utf-8")


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
        meta = _JSONB_VERSION + _dumps_jsonb(metadatas[i])
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


# pgvector's binary send format (vector.c / halfvec.c): int16 dim, int16 unused, then dim
# elements, big-endian: float4 for vector, float2 for halfvec. Text is "[x,y,...]".
_VECTOR_HEADER = struct.Struct("!HH")
_FLOAT4: np.dtype[np.float32] = np.dtype(">f4")
_FLOAT2: np.dtype[np.float16] = np.dtype(">f2")
_TYPES_SQL = (
    "SELECT t.typname, t.oid, t.typarray, format('%I.%I', n.nspname, t.typname) "
    "FROM pg_extension e JOIN pg_type t ON t.typnamespace = e.extnamespace "
    "JOIN pg_namespace n ON n.oid = t.typnamespace "
    "WHERE e.extname = 'vector' AND t.typname IN ('vector', 'halfvec')"
)


def _load_binary(data: Buffer, element: np.dtype[Any], type_name: str) -> Vector:
    dim = _VECTOR_HEADER.unpack_from(data)[0]
    if len(data) != 4 + element.itemsize * dim:
        raise psycopg.DataError(
            f"a binary {type_name} value of {len(data)} bytes does not hold the {dim} elements its "
            "header announces"
        )
    # astype copies into native float32: the result never points into the driver's buffer
    return np.frombuffer(data, dtype=element, count=dim, offset=4).astype(np.float32)


def _load_text(data: Buffer) -> Vector:
    text = bytes(data).decode("ascii")
    return np.array(text[1:-1].split(","), dtype=np.float32)


class _VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> Vector:
        return _load_binary(data, _FLOAT4, "vector")


class _HalfvecBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> Vector:
        return _load_binary(data, _FLOAT2, "halfvec")


class _VectorTextLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> Vector:
        return _load_text(data)


def _as_vector(obj: Any) -> Vector:
    arr = np.asarray(obj, dtype=np.float32)
    if arr.ndim != 1 or not 1 <= arr.size <= 0xFFFF:
        raise psycopg.DataError(
            f"a vector parameter must be one non-empty row of numbers, got shape {arr.shape}"
        )
    return arr


class _VectorTextDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj: Any) -> Buffer:
        return ("[" + ",".join(map(str, _as_vector(obj).tolist())) + "]").encode("ascii")


class _VectorBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        arr = _as_vector(obj)
        return _VECTOR_HEADER.pack(arr.size, 0) + arr.astype(_FLOAT4, copy=False).tobytes()


def register_vector_types(conn: psycopg.Connection[Any]) -> frozenset[str]:
    """Make ``conn`` load ``vector`` and ``halfvec`` values as float32 numpy arrays (text and
    binary results, and their arrays) and send numpy arrays as binary ``vector`` parameters.

    The type OIDs are looked up once, here, from the ``vector`` extension wherever its schema
    is (so a search_path without it does not matter). Returns the type names registered:
    empty when the extension is not installed in the database (nothing is registered then),
    without ``halfvec`` before pgvector 0.7. Lists stay PostgreSQL arrays: pass a vector
    parameter as a numpy array.
    """
    return _register(conn, conn.execute(_TYPES_SQL).fetchall())


async def aregister_vector_types(conn: psycopg.AsyncConnection[Any]) -> frozenset[str]:
    """:func:`register_vector_types` for an async connection."""
    cur = await conn.execute(_TYPES_SQL)
    return _register(conn, await cur.fetchall())


def vector_cursors(conn: psycopg.Connection[Any]) -> type[psycopg.Cursor[Any]]:
    """A cursor class for ``conn`` (a subclass of its ``cursor_factory``) whose cursors load and
    dump as :func:`register_vector_types` makes a connection do, while ``conn``'s own adapters
    stay as they are: for a connection an application lends, which is given back with its
    ``cursor_factory`` (its own ``SELECT embedding`` still returns what it returned before)."""
    adapters = AdaptersMap(conn.adapters)
    _register(adapters, conn.execute(_TYPES_SQL).fetchall())
    return _with_adapters(conn.cursor_factory, adapters)


async def avector_cursors(conn: psycopg.AsyncConnection[Any]) -> type[psycopg.AsyncCursor[Any]]:
    """:func:`vector_cursors` for an async connection."""
    adapters = AdaptersMap(conn.adapters)
    cur = await conn.execute(_TYPES_SQL)
    _register(adapters, await cur.fetchall())
    return _with_adapters(conn.cursor_factory, adapters)


def _with_adapters(base: type[C], adapters: AdaptersMap) -> type[C]:
    def own(self: C) -> AdaptersMap:
        return adapters

    return type(f"Vectorport{base.__name__}", (base,), {"adapters": property(own)})


def _loads_json(data: str | bytes) -> Any:
    # psycopg hands its loaders bytes
    return fast_loads(data if isinstance(data, bytes) else data.encode("utf-8"))


def _register(context: AdaptContext, rows: list[Any]) -> frozenset[str]:
    adapters = context.adapters
    # json and jsonb values (metadata) read by orjson where it gives what json.loads gives
    set_json_loads(_loads_json, context)
    for name, oid, array_oid, regtype in rows:
        TypeInfo(name, oid, array_oid, regtype=regtype).register(context)
        if name == "vector":
            # the OID on the dumper class lets the server type the parameter without a cast;
            # the binary dumper is registered last so a %s placeholder picks it
            for base in (_VectorTextDumper, _VectorBinaryDumper):
                dumper = cast("type[Dumper]", type(base.__name__, (base,), {"oid": oid}))
                adapters.register_dumper(np.ndarray, dumper)
            adapters.register_loader(oid, _VectorBinaryLoader)
        else:
            adapters.register_loader(oid, _HalfvecBinaryLoader)
        adapters.register_loader(oid, _VectorTextLoader)
    return frozenset(row[0] for row in rows)
