"""The base class of the embedders: batching, shape/finiteness checks and call accounting.

The protocol they implement is :class:`vectorport.Embedder` (defined in the core, since compare
and migrate use it too); ``vectorport.ingest.Embedder`` is the same class.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..._embedder import Embedder, Matrix
from ...exceptions import BackendError

__all__ = ["BaseEmbedder", "Embedder", "EmbeddingError", "InputType", "Matrix", "approx_token_counts"]

InputType = Literal["document", "query"]

_WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class EmbeddingError(BackendError):
    """The embedder failed or returned something unusable (wrong shape, NaN)."""


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


class BaseEmbedder(Embedder, ABC):
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

    @property
    def price(self) -> tuple[float, str] | None:
        """US dollars per million tokens and where that price was read; ``None``: no charge
        known (a local model)."""
        return None

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

    def check_ready(self) -> None:
        """Raise now if the model cannot embed (no key, an unreachable endpoint): called before a
        collection is created for it, so a failure leaves nothing behind. Local models: nothing
        to check."""

    def _requests(self, texts: list[str]) -> Iterator[tuple[int, int]]:
        """The ``[start, end)`` slices of ``texts`` sent in one request each: ``batch_size`` texts
        (a provider with a token limit per request cuts them shorter)."""
        for start in range(0, len(texts), self._batch_size):
            yield start, min(start + self._batch_size, len(texts))

    def _expected_dimension(self) -> int | None:
        """The dimension to check results against (``None``: learn it from the first answer)."""
        return self.dimension

    def _embed(self, texts: list[str], input_type: InputType) -> Matrix:
        parts: list[Matrix] = []
        expected = self._expected_dimension()
        for start, end in self._requests(texts):
            part = texts[start:end]
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
