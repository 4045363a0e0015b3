"""A Ray Data datasource over a store's scan segments and a datasink over its upsert."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import ray.data
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

from .._arrow import metadata_json, records_of, records_to_table, schema
from .._models import Record
from .._registry import connect

__all__ = ["StoreDatasink", "StoreDatasource", "read_store", "write_store"]

BYTES_PER_RECORD_EXTRA = 512
"""Metadata and text per record, for Ray's size estimate only."""


def _table(records: Iterable[Record], dimension: int) -> pa.Table:
    recs = list(records)
    return records_to_table(
        [r.key for r in recs],
        [r.vector for r in recs],
        [metadata_json(r.metadata) for r in recs],
        [r.text for r in recs],
        dimension,
    )


def _width(kind: Any) -> int | None:
    """The vector width a column type fixes: a fixed-size list, or Ray's tensor type."""
    size = getattr(kind, "list_size", None)
    if isinstance(size, int) and size > 0:
        return size
    shape = getattr(kind, "shape", None)
    return int(shape[-1]) if isinstance(shape, tuple) and len(shape) == 1 else None


def _read_segment(
    url: str, options: Mapping[str, Any], segment: tuple[int, int], page: int, block_rows: int
) -> Iterator[pa.Table]:
    store = connect(url, **dict(options))
    try:
        dim = store.spec.dimension
        pending: list[Record] = []
        for scanned in store.scan(batch_size=page, segment=segment):
            pending.extend(scanned.records)
            if len(pending) >= block_rows:
                yield _table(pending, dim)
                pending = []
        if pending:
            yield _table(pending, dim)
    finally:
        store.close()


class StoreDatasource(Datasource):  # type: ignore[misc,unused-ignore]
    """Reads a vectorport store: one read task per scan segment."""

    def __init__(
        self,
        url: str,
        *,
        segments: int | None = None,
        batch_size: int = 1000,
        block_rows: int = 10_000,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call,unused-ignore]
        self.url = url
        self.segments = segments
        self.batch_size = batch_size
        self.block_rows = block_rows
        self.options = dict(options or {})
        store = connect(url, **self.options)
        try:
            self.dimension = store.spec.dimension
            self.count: int | None = store.count()
        except Exception:  # a count is only Ray's size estimate (buckets have no count API)
            self.count = None
        finally:
            store.close()

    def get_name(self) -> str:
        return "VectorportStore"

    def estimate_inmemory_data_size(self) -> int | None:
        if self.count is None:
            return None
        return self.count * (4 * self.dimension + BYTES_PER_RECORD_EXTRA)

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        n = max(1, self.segments or parallelism)
        rows = None if self.count is None else -(-self.count // n)
        size = None if rows is None else rows * (4 * self.dimension + BYTES_PER_RECORD_EXTRA)
        url, opts, page, block = self.url, self.options, self.batch_size, self.block_rows
        return [
            ReadTask(
                functools.partial(_read_segment, url, opts, (i, n), page, block),
                BlockMetadata(num_rows=rows, size_bytes=size, input_files=None, exec_stats=None),
                schema=schema(self.dimension),
                per_task_row_limit=per_task_row_limit,
            )
            for i in range(n)
        ]


class StoreDatasink(Datasink[int]):  # type: ignore[misc,unused-ignore]
    """Writes blocks with columns ``key``, ``vector`` and optionally ``metadata`` (JSON text)
    and ``text`` through a store's upsert. The collection is created on the driver before any
    task writes (``dimension``/``metric``), so workers never race to create it."""

    def __init__(
        self,
        url: str,
        *,
        dimension: int | None = None,
        metric: str | None = None,
        batch_size: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.dimension = dimension
        self.metric = metric
        self.batch_size = batch_size
        self.options = dict(options or {})
        self.written = 0

    def get_name(self) -> str:
        return "VectorportStore"

    def on_write_complete(self, write_result: Any) -> None:
        self.written = sum(int(n) for n in write_result.write_returns)

    def on_write_start(self, schema: Any = None) -> None:
        dim = self.dimension
        arrow = getattr(schema, "base_schema", schema)  # Ray wraps the Arrow schema
        if dim is None and isinstance(arrow, pa.Schema) and "vector" in arrow.names:
            dim = _width(arrow.field("vector").type)
        connect(self.url, dimension=dim, metric=self.metric, **self.options).close()

    def write(self, blocks: Iterable[Any], ctx: Any) -> int:
        store = connect(self.url, **self.options)
        written = 0
        try:
            for block in blocks:
                table = block if isinstance(block, pa.Table) else pa.Table.from_pandas(block)
                if table.num_rows:
                    written += store.upsert(records_of(table), batch_size=self.batch_size)
        finally:
            store.close()
        return written


def read_store(
    url: str,
    *,
    segments: int | None = None,
    batch_size: int = 1000,
    options: Mapping[str, Any] | None = None,
    **read_args: Any,
) -> ray.data.Dataset:
    """A dataset of every record of the store at ``url``: one read task per scan segment
    (``segments``, default Ray's parallelism). ``read_args`` go to ``ray.data.read_datasource``."""
    source = StoreDatasource(url, segments=segments, batch_size=batch_size, options=options)
    if segments is not None:
        read_args.setdefault("override_num_blocks", segments)
    dataset: ray.data.Dataset = ray.data.read_datasource(source, **read_args)
    return dataset


def write_store(
    ds: ray.data.Dataset,
    url: str,
    *,
    dimension: int | None = None,
    metric: str | None = None,
    batch_size: int | None = None,
    options: Mapping[str, Any] | None = None,
    **write_args: Any,
) -> int:
    """Upsert every row of ``ds`` (columns ``key``, ``vector``, optional ``metadata`` as JSON
    text and ``text``) into the store at ``url``, creating the collection when ``dimension``
    is given or read from a fixed-size ``vector`` column. Returns the records written."""
    if dimension is None:
        arrow = getattr(ds.schema(), "base_schema", None)
        if isinstance(arrow, pa.Schema) and "vector" in arrow.names:
            dimension = _width(arrow.field("vector").type)
    sink = StoreDatasink(url, dimension=dimension, metric=metric, batch_size=batch_size, options=options)
    ds.write_datasink(sink, **write_args)
    return sink.written
