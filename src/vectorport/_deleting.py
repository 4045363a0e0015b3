"""Deletes for every backend, built on its ``_remove`` primitive: :func:`delete_args` checks a
``delete()`` call before any I/O (keys, or a filter that is not "everything"),
:func:`matching_keys` selects what a filter matches with a scan and the filter oracle (where
the backend cannot delete by predicate), and :func:`remove_keys` deletes keys in batches of
the backend's size."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ._protocol import FilterLike
from ._validate import validate_keys
from .exceptions import ConfigurationError
from .filters import FilterNode, evaluate, parse_filter

if TYPE_CHECKING:
    from ._base import BaseStore

__all__ = ["delete_args", "matching_keys", "remove_keys"]


def delete_args(
    store: BaseStore[Any], keys: Iterable[str] | None, filter: FilterLike
) -> tuple[list[str] | None, FilterNode | None]:
    """``delete()``'s arguments checked before any I/O: the keys, or the parsed filter."""
    if (keys is None) == (filter is None):
        raise ConfigurationError("delete() takes either keys or filter=, not both or neither")
    if keys is not None:
        return validate_keys(keys, store.capabilities.max_key_bytes), None
    where = parse_filter(filter)
    if where is None:
        raise ConfigurationError(
            "delete(filter={}) would delete every record; call delete_all() to empty the "
            "collection, or pass a filter that selects what to delete"
        )
    return None, where


def matching_keys(store: BaseStore[Any], where: FilterNode | None) -> list[str]:
    """The keys of the records matching ``where`` (``None``: all), by a scan and the filter
    oracle."""
    return [
        rec.key
        for page in store.scan(include=["metadata"] if where is not None else [])
        for rec in page
        if where is None or evaluate(where, rec.metadata)
    ]


def remove_keys(store: BaseStore[Any], doomed: Sequence[str]) -> int:
    """Delete ``doomed`` (distinct keys) in batches of the backend's ``max_delete_batch``, each
    retried as the store's policy says; how many were sent."""
    step = store.capabilities.max_delete_batch
    for start in range(0, len(doomed), step):
        chunk = doomed[start : start + step]
        store.retry.call(lambda c=chunk: store._remove(c), f"{store.name}: delete")  # type: ignore[misc]
    return len(doomed)
