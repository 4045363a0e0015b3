"""vectorport's embedders (``hash:64``, ``sentence-transformers:…``, ``voyage:…``) as LangChain
``Embeddings``, so an application embeds its queries with the model ``vectorport ingest`` used."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from .._embedder import Embedder
from ..ingest.embedders import resolve_embedder

__all__ = ["LangChainEmbeddings"]


class LangChainEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` running a vectorport embedder.

    Parameters
    ----------
    embedder
        An embedder spec (``"hash:64"``, ``"sentence-transformers:all-MiniLM-L6-v2"``,
        ``"voyage:voyage-3.5"``) or an embedder object.

    >>> emb = LangChainEmbeddings("hash:8")
    >>> len(emb.embed_query("hello")), emb.model_id
    (8, 'hash:8')
    """

    def __init__(self, embedder: str | Embedder) -> None:
        self.embedder = resolve_embedder(embedder)

    @property
    def model_id(self) -> str:
        """The embedder's model id, as ``vectorport ingest`` records it."""
        return self.embedder.model_id

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embedder.embed_query(text)]
