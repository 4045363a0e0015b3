"""A small corpus both sides of an interop test share: keys, texts, metadata and vectors that
are fixed for a text, so a framework's embedding function and vectorport see the same vectors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DIM = 8


def vector_for(text: str) -> list[float]:
    """A fixed unit vector for ``text`` (what the test's embedding function returns)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(DIM)
    return [float(x) for x in (vec / np.linalg.norm(vec)).astype(np.float32)]


@dataclass(frozen=True)
class Chunk:
    key: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def vector(self) -> list[float]:
        return vector_for(self.text)


def corpus(n: int = 24, *, long_text: bool = True) -> list[Chunk]:
    """``n`` chunks over three sources; with ``long_text`` one text is over 2 KB (more than
    filterable metadata may hold)."""
    out = []
    for i in range(n):
        text = f"Chunk {i} of {['the handbook', 'the guide', 'the notes'][i % 3]}: " + "lorem ipsum " * (
            i + 1
        )
        if long_text and i == 5:
            text = "A long chunk. " + "words and more words " * 150
        meta: dict[str, Any] = {"source": f"doc{i % 3}.md", "page": i, "tags": ["a", f"t{i % 4}"]}
        out.append(Chunk(f"k{i:03d}", text, meta))
    return out


QUERIES = [vector_for(f"query {i}") for i in range(5)]


def node_order(metadata: dict[str, Any]) -> dict[str, str]:
    """What a LlamaIndex node's record carries for the order of its metadata keys (LlamaIndex
    renders them in dict order; stores such as jsonb reorder them): nothing when sorted."""
    order = list(metadata)
    return {} if order == sorted(order) else {"_llamaindex_node": json.dumps({"metadata_order": order})}
