"""Fixtures for the Chroma tests: an embedded directory and a real ``chroma run`` server."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable

import pytest

import vectorport

StoreMaker = Callable[[int, str], vectorport.VectorStore]


_names = itertools.count()


def _unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}"


@pytest.fixture(scope="session")
def embedded_url(chroma_dir: str) -> Callable[[], str]:
    """A function returning the URL of a new, unused embedded collection."""
    return lambda: f"chroma://{chroma_dir}?collection={_unique('emb')}"


@pytest.fixture(scope="session")
def server_url(chroma_server: str) -> Callable[[], str]:
    """A function returning the URL of a new, unused collection on the server."""
    return lambda: f"chroma+http://{chroma_server}?collection={_unique('srv')}"


@pytest.fixture(scope="session", params=["embedded", "server"])
def new_url(request: pytest.FixtureRequest) -> Callable[[], str]:
    """``embedded_url`` and ``server_url`` in turn."""
    fixture: Callable[[], str] = request.getfixturevalue(f"{request.param}_url")
    return fixture
