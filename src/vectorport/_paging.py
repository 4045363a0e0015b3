"""Scans in pages with resumable cursors, for every backend: :func:`scan_args` checks a
``scan()`` call before any I/O, :func:`pages` runs the page loop over a backend's page reader
(its ``_scan_page``, or another scan of its own such as ``scan_bins``), and :func:`page_of`
wraps a backend's position in the checked cursor a caller sees (:mod:`vectorport._cursor`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ._cursor import Position, decode_cursor, encode_cursor
from ._models import ALL_INCLUDES, Include, Record, ScanPage
from ._validate import check_batch_size
from .exceptions import ConfigurationError

if TYPE_CHECKING:
    from ._base import BaseStore

__all__ = ["PAGE_BYTES", "PageReader", "page_of", "pages", "scan_args"]

PAGE_BYTES = 16 * 1024 * 1024
"""The most texts and metadata one scan page holds, whatever its row count (at least one
record): a page of 1,000 records of 25 MB texts would hold 25 GB. Backends that read large
values page by page (parquet's parts, pgvector's scans) cut their pages here."""

PageReader = Callable[[Position | None], tuple[Sequence[Record], Position | None]]
"""Reads the page after a position (``None``: the first): its records, and the position to
continue from (``None`` when there is no more)."""


def scan_args(
    store: BaseStore[Any],
    requested: int | None,
    include: Iterable[str] | None,
    segment: Any,
    cursor: str | None,
) -> tuple[int, frozenset[Include], tuple[int, int], Position | None]:
    """``scan()``'s arguments checked before any I/O: page size, includes, segment and the
    position a cursor resumes from."""
    if not (isinstance(segment, tuple | list) and len(segment) == 2):
        raise ConfigurationError(f"segment must be a pair (i, n) with 0 <= i < n, got {segment!r}")
    index, parts = segment
    if not (type(index) is int and type(parts) is int and parts >= 1 and 0 <= index < parts):
        raise ConfigurationError(f"segment must be (i, n) with 0 <= i < n, got {segment!r}")
    limit = check_batch_size(requested, store.capabilities.max_scan_page)
    inc = Include.parse(include, ALL_INCLUDES)
    position = None if cursor is None else decode_cursor(cursor, store.name, (index, parts))
    _ = store.spec
    return limit, inc, (index, parts), position


def pages(
    store: BaseStore[Any], read: PageReader, part: tuple[int, int], position: Position | None
) -> Iterator[ScanPage]:
    """The pages ``read`` gives from ``position`` on (each read retried as the store's retry
    policy says), until it says there is no more: the loop of ``scan()``, and of a store's
    other scans (``scan_bins``)."""
    while True:
        records, position = store.retry.call(lambda p=position: read(p), f"{store.name}: scan")  # type: ignore[misc]
        page = page_of(store.name, records, position, part)
        if page.records or page.cursor is None:
            yield page
        if page.cursor is None:
            return


def page_of(
    backend: str, records: Sequence[Record], position: Position | None, part: tuple[int, int]
) -> ScanPage:
    """A page of ``scan()``, its cursor resuming after ``position`` (``None``: the last)."""
    cursor = None if position is None else encode_cursor(backend, part, position)
    return ScanPage(tuple(records), cursor)
