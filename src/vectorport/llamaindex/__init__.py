"""LlamaIndex on vectorport: :class:`LlamaIndexStore` is a LlamaIndex vector store over any
vectorport store or URL, usable in ``VectorStoreIndex.from_vector_store`` and its query engines
and retrievers (see ``docs/frameworks.md``). Needs ``pip install 'vectorport[llamaindex]'``.
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "vectorport.llamaindex needs llama-index-core, which is not installed; "
        "install it with: pip install 'vectorport[llamaindex]'"
    ) from exc

from ._embeddings import LlamaIndexEmbedding
from ._filters import to_portable
from ._store import LlamaIndexStore

__all__ = ["LlamaIndexEmbedding", "LlamaIndexStore", "to_portable"]
