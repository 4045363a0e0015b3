"""What the framework adapters' tests (``tests/langchain``, ``tests/llamaindex``) run on: every
backend and URL form of ``tests/_backends.py`` (memory, the real backends and their variants such
as ``chroma+http``), each param carrying its backend's marker, so ``pytest -m langchain -m
pgvector`` style selections work."""

from __future__ import annotations

from typing import Any

import pytest

from ._backends import URLS, VARIANTS

__all__ = ["TARGETS", "each_target"]

TARGETS = (*URLS, *VARIANTS)
"""Names ``url_for`` understands; a variant's backend is the part before ``+``."""


def each_target() -> list[Any]:
    """One param per target, marked with its backend."""
    return [pytest.param(name, marks=getattr(pytest.mark, name.split("+")[0]), id=name) for name in TARGETS]
