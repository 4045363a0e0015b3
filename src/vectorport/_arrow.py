"""Records as Arrow tables: the one columnar shape of Parquet snapshots and Ray Data blocks.

``key`` (string), ``vector`` (``fixed_size_list<float32>[dim]``: DuckDB reads ``FLOAT[dim]``,
NumPy gets a 2-D view), ``metadata`` (a JSON object as a string: Parquet has no type for
arbitrary JSON, and a struct column would force one schema on every record) and ``text``
(string, null when the record has none). Needs pyarrow (the ``parquet`` or ``ray`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ._models import JSON, Record
from .exceptions import ConfigurationError

__all__ = ["metadata_json", "records_of", "records_to_table", "schema"]


def schema(dimension: int) -> pa.Schema:
    """The Arrow schema of records of ``dimension``-dimensional vectors."""
    return pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
            pa.field("metadata", pa.string(), nullable=False),
            pa.field("text", pa.string()),
        ]
    )


def metadata_json(metadata: dict[str, JSON] | None) -> str:
    return json.dumps(metadata or {}, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def records_to_table(
    keys: Sequence[str],
    vectors: Sequence[Any],
    metadatas: Sequence[str],
    texts: Sequence[str | None],
    dim: int,
) -> pa.Table:
    """A table of records given as columns (metadata already JSON)."""
    if not keys:
        return schema(dim).empty_table()
    flat = pa.array(np.concatenate([np.asarray(v, dtype=np.float32).ravel() for v in vectors]))
    return pa.Table.from_arrays(
        [
            pa.array(list(keys), type=pa.string()),
            pa.FixedSizeListArray.from_arrays(flat, dim),
            pa.array(list(metadatas), type=pa.string()),
            pa.array(list(texts), type=pa.string()),
        ],
        schema=schema(dim),
    )


def records_of(
    table: pa.Table,
    rows: Sequence[int] | None = None,
    with_vectors: bool = True,
    dimension: int | None = None,
) -> list[Record]:
    """Records of ``rows`` of a table (all when ``None``). A ``vector`` column may be a fixed-size
    or a plain list column (what a Ray ``map_batches`` step may leave); ``metadata`` is JSON
    text, or absent (empty metadata); ``text`` may be absent."""
    if rows is not None:
        table = table.take(pa.array(rows, type=pa.int64()))
    names = set(table.column_names)
    keys = table.column("key").to_pylist()
    metas = table.column("metadata").to_pylist() if "metadata" in names else ["{}"] * len(keys)
    texts = table.column("text").to_pylist() if "text" in names else [None] * len(keys)
    vectors: Any = [None] * len(keys)
    if with_vectors and keys:
        column = table.column("vector").combine_chunks()
        flat = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        vectors = flat.reshape(len(keys), dimension or flat.size // len(keys))
    return [
        Record(k, None if v is None else v.copy(), _metadata_of(k, m), t)
        for k, v, m, t in zip(keys, vectors, metas, texts, strict=True)
    ]


def _metadata_of(key: str, value: Any) -> dict[str, JSON]:
    """A ``metadata`` cell as a dict: JSON text of an object (a snapshot part edited by hand may
    hold anything, named with its record), or already a mapping (a Ray block)."""
    if not isinstance(value, str):
        return dict(value or {})
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        parsed = exc
    if not isinstance(parsed, dict):
        why = f"is not valid JSON ({parsed})" if isinstance(parsed, Exception) else "is not a JSON object"
        raise ConfigurationError(  # a bad input file (exit 2)
            f"record {key!r} at metadata {why}: {value[:60]!r}; nothing was read. The file was "
            "edited or written by another tool; re-export it"
        )
    return parsed
