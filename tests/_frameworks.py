"""What the framework adapters' tests (``tests/langchain``, ``tests/llamaindex``) run on: every
test target of every registered backend (:func:`vectorport.testing.backends.targets`: memory, the
real backends and their variants such as ``chroma+http``), each param carrying its backend's
marker, and optionally pgvector opened with :func:`vectorport.aconnect` (the adapters' async
methods then run on psycopg's async pool)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

import vectorport
from vectorport.testing.backends import targets

__all__ = ["ACONNECT", "each_target", "opened_target"]

ACONNECT = "pgvector+aconnect"
"""pgvector through ``vectorport.aconnect``: the adapter gets the awaitable store."""


def each_target(*, aconnect: bool = False) -> list[Any]:
    """One param per target, marked with its backend (and the ``aconnect`` form of pgvector)."""
    names = list(targets())  # NAME or NAME+VARIANT, as url_for takes them
    if aconnect and "pgvector" in names:
        names.append(ACONNECT)
    return [pytest.param(name, marks=getattr(pytest.mark, name.split("+")[0]), id=name) for name in names]


@asynccontextmanager
async def opened_target(name: str, url_for: Callable[..., str], dimension: int) -> AsyncIterator[Any]:
    """What an adapter is made from for ``name``: a URL (the adapter opens it and the first
    write creates the collection), or for :data:`ACONNECT` an awaitable store, dropped and
    closed afterwards."""
    if name != ACONNECT:
        yield url_for(name)
        return
    store = await vectorport.aconnect(url_for("pgvector"), dimension=dimension)
    try:
        yield store
    finally:
        await store.adrop()
        await store.aclose()
