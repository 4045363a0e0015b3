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
from vectorport import Feature
from vectorport.testing.backends import targets

__all__ = ["ACONNECT", "each_target", "opened_target"]

ACONNECT = "pgvector+aconnect"
"""pgvector through ``vectorport.aconnect``: the adapter gets the awaitable store."""


def each_target(*, aconnect: bool = False) -> list[Any]:
    """One param per target, marked with its backend (and the ``aconnect`` form of pgvector)."""
    # NAME or NAME+VARIANT, as url_for takes them. A variant that only passes an option to the
    # same client (pgvector+exact: an exact index) adds nothing the adapters could differ on; a
    # variant with a URL scheme of its own (chroma+http: another client, a server) does.
    # A read-only backend (no Feature.WRITE) is left out: every test here writes.
    names = [
        name
        for name, (owner, target) in targets().items()
        if _own_client(name, target.url) and (not owner.installed or _writes(owner))
    ]
    if aconnect and "pgvector" in names:
        names.append(ACONNECT)
    return [pytest.param(name, marks=getattr(pytest.mark, name.split("+")[0]), id=name) for name in names]


def _writes(owner: Any) -> bool:
    return Feature.WRITE in owner.load().capabilities.features


def _own_client(name: str, url: str) -> bool:
    main, _, variant = name.partition("+")
    return not variant or not url.startswith(("{scheme}:", f"{main}:"))


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
