"""LangChain on vectorport: :class:`LangChainStore` is a LangChain ``VectorStore`` over any
vectorport store or URL, so a LangChain application moves from Chroma to pgvector to a vector
bucket by changing one URL (see ``docs/frameworks.md``). Needs ``pip install 'vectorport[langchain]'``.
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vectorport.langchain needs langchain-core, which is not installed; "
        "install it with: pip install 'vectorport[langchain]'"
    ) from exc

from ._embeddings import LangChainEmbeddings
from ._store import LangChainStore

__all__ = ["LangChainEmbeddings", "LangChainStore"]
