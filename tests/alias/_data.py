"""Small records and an alias registry for the alias tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import vectorport
from vectorport import Record

DIM = 8


def records(n: int, prefix: str = "doc", seed: int = 0) -> list[Record]:
    """``n`` records with a ``lang`` and a ``year`` to filter on."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    return [
        Record(
            f"{prefix}#{i}", vectors[i], {"lang": "en" if i % 2 else "fr", "year": 2000 + i % 7}, f"text {i}"
        )
        for i in range(n)
    ]


def filled(url: str, n: int = 60) -> vectorport.BaseStore[object]:
    """The store at ``url``, created with :data:`DIM` dimensions and ``n`` records."""
    store = vectorport.connect(url, dimension=DIM)
    store.upsert(records(n))
    return store


def registry(tmp_path: Path) -> str:
    return str(tmp_path / "aliases.sqlite")
