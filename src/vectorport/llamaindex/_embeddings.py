"""vectorport's embedders as a LlamaIndex embedding model, so an application embeds its queries
with the model ``vectorport ingest`` used."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from .._embedder import Embedder
from ..ingest.embedders import resolve_embedder

__all__ = ["LlamaIndexEmbedding"]


class LlamaIndexEmbedding(BaseEmbedding):
    """A LlamaIndex embedding model running a vectorport embedder.

    Parameters
    ----------
    embedder
        An embedder spec (``"hash:64"``, ``"sentence-transformers:all-MiniLM-L6-v2"``,
        ``"voyage:voyage-3.5"``) or an embedder object.

    >>> emb = LlamaIndexEmbedding("hash:8")
    >>> len(emb.get_query_embedding("hello")), emb.model_name
    (8, 'hash:8')
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: str | Embedder, **kwargs: Any) -> None:
        resolved = resolve_embedder(embedder)
        super().__init__(model_name=resolved.model_id, **kwargs)
        self._embedder = resolved

    @classmethod
    def class_name(cls) -> str:
        return "VectorportEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed_documents(texts)]
