"""The one embedder protocol: what ingest, search, doctor, compare and ``migrate --reembed``
need from an embedding model.

An embedder turns texts into float32 vectors of a fixed ``dimension`` and names its model with
a ``model_id`` such as ``sentence-transformers:all-MiniLM-L6-v2`` or ``voyage:voyage-3.5``;
that id is recorded on the collection and on every chunk, and querying with another model is
refused. ``count_tokens`` and ``max_tokens`` let the chunker respect the model's own limit.
The implementations (and their base class, ``BaseEmbedder``) live in ``vectorport.ingest``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "Matrix"]

Matrix = npt.NDArray[np.float32]
"""``(texts, dimension)`` float32 vectors."""


@runtime_checkable
class Embedder(Protocol):
    """An embedding model: its id, its dimension, its tokenizer and its document/query vectors."""

    @property
    def model_id(self) -> str:
        """``provider:model`` (plus ``@dimension`` when the output was shortened)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    @property
    def max_tokens(self) -> int | None:
        """Longest input, in the model's tokens without special tokens (``None``: no limit known)."""
        ...

    @property
    def batch_size(self) -> int:
        """Texts per call to the model."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Token counts in the model's own tokenizer (or a documented approximation)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        """``(len(texts), dimension)`` float32 vectors for chunks."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """One float32 vector for a search query."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        """Vectors for several search queries, batched."""
        ...
