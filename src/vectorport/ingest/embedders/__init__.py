"""Embedders behind one protocol, named by ``provider:model`` strings.

==========================================  ==============================================
spec / recorded ``model_id``                 embedder
==========================================  ==============================================
``sentence-transformers:all-MiniLM-L6-v2``   :class:`SentenceTransformerEmbedder` (default;
                                             ``st:`` and a bare name or path also work)
``voyage:voyage-3.5`` (``@256`` shortened)    :class:`VoyageEmbedder`
``hash:64`` (``hash:64:7`` another seed)      :class:`HashEmbedder` (tests, benchmarks)
==========================================  ==============================================

A recorded ``model_id`` resolves back to its embedder, so ``vectorport search`` and
``vectorport doctor`` embed queries with the collection's own model by default. Only this
module is imported by ``vectorport.ingest``; torch and voyageai load on first use.
"""

from __future__ import annotations

from typing import Any

from ...exceptions import ConfigurationError
from .base import BaseEmbedder, Embedder, EmbeddingError, approx_token_counts
from .hashing import HashEmbedder
from .sentence_transformers import DEFAULT_MODEL, SentenceTransformerEmbedder, packaged_model_path
from .voyage import VoyageEmbedder

__all__ = [
    "DEFAULT_EMBEDDER",
    "BaseEmbedder",
    "Embedder",
    "EmbeddingError",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "VoyageEmbedder",
    "approx_token_counts",
    "packaged_model_path",
    "resolve_embedder",
]

DEFAULT_EMBEDDER = f"sentence-transformers:{DEFAULT_MODEL}"

_ST_PREFIXES = ("sentence-transformers:", "st:")


def resolve_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """An embedder from a spec string (or pass an embedder through).

    >>> resolve_embedder("hash:16").model_id
    'hash:16'
    >>> resolve_embedder("voyage:voyage-3.5@256", api_key="k").model_id
    'voyage:voyage-3.5@256'
    """
    if spec is None:
        spec = DEFAULT_EMBEDDER
    if not isinstance(spec, str):
        return spec
    text = spec.strip()
    if text.startswith("hash:"):
        parts = text.split(":")
        try:
            dim = int(parts[1])
            seed = int(parts[2]) if len(parts) > 2 else 0
        except (IndexError, ValueError):
            raise ConfigurationError(
                f"bad hash embedder {spec!r}; expected hash:DIM or hash:DIM:SEED"
            ) from None
        return HashEmbedder(dim, seed=seed, **options)
    if text.startswith("voyage:"):
        name = text.removeprefix("voyage:")
        model, _, size = name.partition("@")
        if size and not size.isdigit():
            raise ConfigurationError(f"bad Voyage model {spec!r}; expected voyage:MODEL or voyage:MODEL@DIM")
        return VoyageEmbedder(model or "voyage-3.5", output_dimension=int(size) if size else None, **options)
    for prefix in _ST_PREFIXES:
        if text.startswith(prefix):
            text = text.removeprefix(prefix)
            break
    if not text:
        raise ConfigurationError(f"no model named in the embedder spec {spec!r}")
    return SentenceTransformerEmbedder(text, **options)
