"""Is this embedder the one a collection was built with? Checked before ingesting and querying."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._embedder import Embedder
from .._protocol import VectorStore
from ..exceptions import Advice, Advised, Call, ConfigurationError
from .embedders import resolve_embedder, same_model

__all__ = ["ModelMismatchError", "check_embedder", "embedder_for", "recorded_model"]


class ModelMismatchError(ConfigurationError):
    """The embedder's model (or dimension) is not the one the collection was embedded with.

    Vectors of different models live in different spaces: a query embedded with another model
    returns plausible-looking but meaningless neighbours, so vectorport refuses instead.
    """


REEMBED = Call("migrate", ("SRC", "DST"), (Advice("reembed", "MODEL"),))
"""The advice to re-embed a collection into a new one."""


def recorded_model(store: VectorStore, sample: int = 200) -> str | None:
    """The collection's embedding model: its spec, else the most common ``embedding_model``
    among the first ``sample`` records (for backends that do not keep the spec's model)."""
    if store.spec.embedding_model:
        return store.spec.embedding_model
    seen: Counter[str] = Counter()
    for page in store.scan(batch_size=sample, include=["metadata"]):
        for rec in page:
            model = rec.metadata.get("embedding_model")
            if isinstance(model, str):
                seen[model] += 1
        break
    return seen.most_common(1)[0][0] if seen else None


def check_embedder(store: VectorStore, embedder: Embedder) -> str | None:
    """Raise :class:`ModelMismatchError` unless ``embedder`` fits the collection; returns the
    recorded model id (``None`` for a collection that records none yet)."""
    spec = store.spec
    recorded = recorded_model(store)
    if recorded and not same_model(recorded, embedder.model_id):
        try:
            resolve_embedder(recorded)
            advice = Advised.of("query with {}, or re-embed", Advice("embedder", recorded))
        except ConfigurationError:  # a model vectorport cannot run: say so, suggest nothing untypable
            advice = Advised.of(
                "vectorport cannot embed with {!r} itself; query with vectors, or re-embed", recorded
            )
        raise ModelMismatchError(
            Advised.of(
                "collection {!r} at {} was embedded with {!r}, but the embedder is {!r}; {} into a new "
                "collection with `{}`",
                spec.name,
                store.url,
                recorded,
                embedder.model_id,
                advice,
                REEMBED,
            )
        )
    if embedder.dimension != spec.dimension:
        raise ModelMismatchError(
            f"collection {spec.name!r} at {store.url} holds {spec.dimension}-dimensional vectors, but "
            f"{embedder.model_id!r} makes {embedder.dimension}-dimensional ones"
        )
    return recorded


def embedder_for(store: VectorStore, spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """``spec`` resolved, else the embedder of the model the collection records (else the
    default sentence-transformers model)."""
    if spec is not None:
        return resolve_embedder(spec, **options)
    return resolve_embedder(recorded_model(store), **options)
