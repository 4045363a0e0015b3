"""The one small embedder protocol, and a base class that batches, checks and counts.

An embedder turns texts into float32 vectors of a fixed ``dimension`` and names its model with
a ``model_id`` such as ``sentence-transformers:all-MiniLM-L6-v2`` or ``voyage:voyage-3.5``;
that id is recorded on the collection and on every chunk, and querying with another model is
refused. ``count_tokens`` and ``max_tokens`` let the chunker respect the model's own limit.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ...exceptions import BackendError

__all__ = ["BaseEmbedder", "Embedder", "EmbeddingError", "InputType", "Matrix", "approx_token_counts"]

Matrix = npt.NDArray[np.float32]
InputType = Literal["document", "query"]

_WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class EmbeddingError(BackendError):
    """The embedder failed or returned something unusable (wrong shape, NaN)."""


@runtime_checkable
class Embedder(Protocol):
    """What the ingester, ``search`` and ``doctor`` need from an embedding model."""

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


def approx_token_counts(texts: Sequence[str]) -> list[int]:
    """Subword-tokenizer estimate: words and punctuation, long words counted per 4 characters.

    Used by embedders whose tokenizer cannot be loaded offline; it over-counts slightly, which
    keeps chunks under a model's limit.
    """
    out = []
    for text in texts:
        n = 0
        for tok in _WORDISH.findall(text):
            n += max(1, -(-len(tok) // 4)) if len(tok) > 6 else 1
        out.append(n)
    return out


class BaseEmbedder(ABC):
    """Batching, shape/finiteness checks and call accounting; subclasses embed one batch.

    ``calls`` counts requests to the model and ``texts_embedded`` the texts sent: the
    incremental indexer's "0 embedding calls for unchanged documents" is checked with them.
    """

    def __init__(self, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._batch_size = batch_size
        self.calls = 0
        self.texts_embedded = 0
        self._lock = threading.Lock()

    @property
    @abstractmethod
    def model_id(self) -> str: ...

    @property
    @abstractmethod
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int | None:
        return None

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return approx_token_counts(texts)

    @abstractmethod
    def _embed_batch(self, texts: list[str], input_type: InputType) -> Matrix:
        """Vectors for at most ``batch_size`` texts."""

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        return self._embed(list(texts), "document")

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        vec: npt.NDArray[np.float32] = self._embed([text], "query")[0]
        return vec

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(list(texts), "query")

    def _expected_dimension(self) -> int | None:
        """The dimension to check results against (``None``: learn it from the first answer)."""
        return self.dimension

    def _embed(self, texts: list[str], input_type: InputType) -> Matrix:
        parts: list[Matrix] = []
        expected = self._expected_dimension()
        for start in range(0, len(texts), self._batch_size):
            part = texts[start : start + self._batch_size]
            with self._lock:
                self.calls += 1
                self.texts_embedded += len(part)
            got = np.asarray(self._embed_batch(part, input_type), dtype=np.float32)
            if expected is None and got.ndim == 2:
                expected = got.shape[1]
            if got.shape != (len(part), expected):
                raise EmbeddingError(
                    f"{self.model_id} returned vectors of shape {got.shape} for {len(part)} texts; "
                    f"expected ({len(part)}, {expected})"
                )
            if not np.isfinite(got).all():
                bad = int(np.flatnonzero(~np.isfinite(got).all(axis=1))[0])
                raise EmbeddingError(
                    f"{self.model_id} returned a non-finite vector for text #{start + bad}; "
                    "nothing was written"
                )
            parts.append(got)
        if not parts:
            return np.empty((0, expected or 0), dtype=np.float32)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.model_id!r}>"
