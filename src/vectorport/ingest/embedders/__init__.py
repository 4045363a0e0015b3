"""Embedders behind one protocol, named by ``provider:model`` strings.

==========================================  ==============================================
spec / recorded ``model_id``                 embedder
==========================================  ==============================================
``sentence-transformers:all-MiniLM-L6-v2``   :class:`SentenceTransformerEmbedder` (default;
                                             ``st:`` and a bare name or path also work)
``voyage:voyage-3.5`` (``@256`` shortened)    :class:`VoyageEmbedder`
``hash:64`` (``hash:64:7`` another seed)      :class:`HashEmbedder` (tests, benchmarks)
``chroma:default``                           Chroma's default embedding function: the same
                                             all-MiniLM-L6-v2, run by sentence-transformers
==========================================  ==============================================

Chroma's default embedding function runs all-MiniLM-L6-v2 through ONNX Runtime (256-token
truncation, mean pooling, L2 normalisation): the model and normalisation of the packaged
sentence-transformers default, so a collection that plain ``chromadb`` embedded is searched with
it (``tests/ingest/test_chroma_default.py`` measures cosine ≥ 0.999 per vector against
chromadb's own function). :func:`same_model` treats the two ids as one model.

A recorded ``model_id`` resolves back to its embedder, so ``vectorport search`` and
``vectorport doctor`` embed queries with the collection's own model by default. Only this
module is imported by ``vectorport.ingest``; torch and voyageai load on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...exceptions import Advice, Advised, ConfigurationError
from .base import BaseEmbedder, Embedder, EmbeddingError, approx_token_counts
from .hashing import HashEmbedder
from .sentence_transformers import (
    DEFAULT_MODEL,
    SentenceTransformerEmbedder,
    folder_model_name,
    packaged_model_path,
)
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
    "same_model",
]

DEFAULT_EMBEDDER = f"sentence-transformers:{DEFAULT_MODEL}"

_ST_PREFIXES = ("sentence-transformers:", "st:")

# Model ids that name the same vectors, mapped to one canonical id. Chroma records its default
# function as "chroma:default", and a SentenceTransformerEmbeddingFunction by its model name.
_ALIASES: dict[str, str] = {
    f"chroma:{DEFAULT_MODEL}": DEFAULT_EMBEDDER,
    f"chroma:sentence-transformers/{DEFAULT_MODEL}": DEFAULT_EMBEDDER,
    "chroma:default": DEFAULT_EMBEDDER,
    f"sentence-transformers:sentence-transformers/{DEFAULT_MODEL}": DEFAULT_EMBEDDER,
    f"st:{DEFAULT_MODEL}": DEFAULT_EMBEDDER,
    f"st:sentence-transformers/{DEFAULT_MODEL}": DEFAULT_EMBEDDER,
}


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two recorded model ids name the same embedding model.

    >>> same_model("chroma:default", "sentence-transformers:all-MiniLM-L6-v2")
    True
    >>> same_model("hash:64", "hash:64:5")
    False
    """
    if a is None or b is None:
        return a == b
    return _canonical(a) == _canonical(b)


def _canonical(model_id: str) -> str:
    """One id per model: the aliases above, and a sentence-transformers model recorded by its
    folder (as vectorport and Chroma's ``SentenceTransformerEmbeddingFunction`` record a folder,
    by its path) named by the folder's name, as an id recorded before paths were."""
    model_id = _ALIASES.get(model_id, model_id)
    for prefix in _ST_PREFIXES:
        rest = model_id.removeprefix(prefix)
        if rest != model_id and ("/" in rest or "\\" in rest) and Path(rest).expanduser().is_dir():
            model_id = f"sentence-transformers:{folder_model_name(rest)}"
            break
    return _ALIASES.get(model_id, model_id)


def resolve_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """An embedder from a spec string (or pass an embedder through).

    >>> resolve_embedder("hash:16").model_id
    'hash:16'
    >>> resolve_embedder("voyage:voyage-3.5@256", api_key="k").model_id
    'voyage:voyage-3.5@256'
    >>> resolve_embedder("chroma:default")  # all-MiniLM-L6-v2, loaded on first use
    <SentenceTransformerEmbedder 'chroma:default'>
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
    if text.startswith("chroma:"):
        if _ALIASES.get(text) != DEFAULT_EMBEDDER:
            raise ConfigurationError(
                Advised.of(
                    "{!r} is an embedding function configured in Chroma that vectorport cannot run (it "
                    "runs Chroma's default one, chroma:default); pass {} with the same model "
                    "(sentence-transformers:NAME|PATH, voyage:MODEL)",
                    spec,
                    Advice("embedder"),
                )
            )
        # Keeps the recorded id, so the collection's own model is found equal to it.
        return SentenceTransformerEmbedder(DEFAULT_MODEL, model_id=text, **options)
    for prefix in _ST_PREFIXES:
        if text.startswith(prefix):
            text = text.removeprefix(prefix)
            break
    else:
        provider, colon, _ = text.partition(":")
        # a model name holds no ``:`` (Hugging Face ids cannot): ``openai:…`` names a provider
        # vectorport does not run, refused at once rather than looked up on the Hub
        if colon and provider.replace("-", "").replace("_", "").isalnum() and not Path(text).exists():
            raise ConfigurationError(
                f"unknown embedder {spec!r}: vectorport runs hash:DIM, sentence-transformers:NAME|PATH "
                "(st:NAME), voyage:MODEL and chroma:default"
            )
    if not text:
        raise ConfigurationError(f"no model named in the embedder spec {spec!r}")
    return SentenceTransformerEmbedder(text, **options)
