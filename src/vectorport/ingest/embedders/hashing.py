"""``hash:DIM``: a deterministic bag-of-words embedder in pure numpy.

Each lower-cased word adds a signed unit to one hashed coordinate; the sum is L2-normalised.
Texts sharing words land close together, so search and the health checks behave sensibly, with
no model, no network and microseconds per text: it is for tests, benchmarks and dry runs, not
for production retrieval quality.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from ...exceptions import ConfigurationError
from .base import BaseEmbedder, InputType, Matrix

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(BaseEmbedder):
    """Feature-hashing embedder.

    Parameters
    ----------
    dimension
        Vector length.
    seed
        Another seed is another model (its ``model_id`` says so): useful to simulate a changed
        embedding endpoint in tests.

    >>> e = HashEmbedder(8)
    >>> e.model_id, e.embed_documents(["a b", "a b"]).shape
    ('hash:8', (2, 8))
    """

    def __init__(self, dimension: int = 64, *, seed: int = 0, batch_size: int = 256) -> None:
        super().__init__(batch_size)
        if dimension < 2:
            raise ConfigurationError(
                f"hash embedder dimension must be at least 2, got {dimension} (hash:DIM)"
            )
        self._dimension = dimension
        self.seed = seed
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def model_id(self) -> str:
        return f"hash:{self._dimension}" + (f":{self.seed}" if self.seed else "")

    @property
    def dimension(self) -> int:
        return self._dimension

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(_WORD.findall(t)) for t in texts]

    def _slot(self, word: str) -> tuple[int, float]:
        hit = self._cache.get(word)
        if hit is None:
            digest = hashlib.blake2b(f"{self.seed}:{word}".encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self._dimension, 1.0 if value >> 63 else -1.0)
            if len(self._cache) < 1_000_000:
                self._cache[word] = hit
        return hit

    def _embed_batch(self, texts: list[str], input_type: InputType) -> Matrix:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                col, sign = self._slot(word)
                out[row, col] += sign
            if not out[row].any():
                # Empty or wordless text still needs a direction under the cosine metric.
                out[row, self._slot("\x00empty")[0]] = 1.0
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out
