"""``--reembed MODEL``: new vectors from each record's text, through ``vectorport.ingest``'s embedders.

``MODEL`` is an embedder spec as :func:`vectorport.ingest.embedders.resolve_embedder` reads it
(``sentence-transformers:all-MiniLM-L6-v2``, ``voyage:voyage-3.5``, ``hash:64``); its
``model_id`` is recorded on the target collection. The migration engine sees only the core
:class:`vectorport.Embedder` protocol; the embedders (and torch) are imported only when a
migration asks to re-embed, to turn the spec into one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._embedder import Embedder
from .._models import JSON, Record, Vector

__all__ = ["Embedder", "ReembedEstimate", "embed_texts", "load_embedder", "reembedded"]


@dataclass
class ReembedEstimate:
    """What a re-embedding will send to its model, counted by the plan's pass over the source:
    texts, tokens (the embedder's own count, or its documented estimate) and, for a paid
    provider, the cost at its list price -- an estimate, said as one, with where the price was
    read (free tiers and discounts not applied).

    >>> from vectorport.ingest.embedders import HashEmbedder
    >>> est = ReembedEstimate.of(HashEmbedder(8))
    >>> est.add(["one two three", "four"])
    >>> est.texts, est.tokens, est.cost, est.describe()
    (2, 4, None, '2 texts, 4 tokens (no charge known for hash:8)')
    """

    model: str
    count: Callable[[Sequence[str]], list[int]] = field(repr=False, compare=False)
    usd_per_million_tokens: float | None = None
    price_source: str | None = None
    texts: int = 0
    tokens: int = 0
    done: int = 0
    """Records an interrupted run already embedded (its checkpoint says so): not counted."""
    after: str | None = field(default=None, repr=False)
    """A resumed run's checkpoint cursor: only the records past it are counted."""
    resumed: bool = False

    @classmethod
    def of(cls, embedder: Embedder) -> ReembedEstimate:
        # a price is known only for a paid provider's embedder (``price``); a local model has none
        price: tuple[float, str] | None = getattr(embedder, "price", None)
        usd, source = price if price is not None else (None, None)
        return cls(embedder.model_id, embedder.count_tokens, usd, source)

    def resume(self, cursor: str | None, done: int) -> None:
        """Count only what a resumed run has left: the records past ``cursor`` (``None``: the
        interrupted run acknowledged every record), ``done`` already embedded."""
        self.after, self.done, self.resumed = cursor, done, True

    def add(self, texts: Sequence[str]) -> None:
        """Count a page's texts."""
        self.texts += len(texts)
        self.tokens += sum(self.count(texts)) if texts else 0

    @property
    def cost(self) -> float | None:
        """Estimated US dollars, ``None`` when the model has no known price."""
        if self.usd_per_million_tokens is None:
            return None
        return self.tokens * self.usd_per_million_tokens / 1e6

    def describe(self) -> str:
        counted = f"{self.texts} texts, {self.tokens} tokens"
        if self.resumed:
            counted += f" left ({self.done} already embedded by the interrupted run, not counted)"
        if self.cost is None:
            return f"{counted} (no charge known for {self.model})"
        shown = f"{self.cost:,.2f}" if self.cost >= 1 else f"{self.cost:.4f}"
        return (
            f"{counted}, estimated ${shown} at ${self.usd_per_million_tokens} per million tokens "
            f"({self.price_source}; free tiers and discounts not applied)"
        )

    def to_dict(self) -> dict[str, JSON]:
        cost = self.cost
        return {
            "model": self.model,
            "texts": self.texts,
            "tokens": self.tokens,
            "already_done": self.done,
            "usd_per_million_tokens": self.usd_per_million_tokens,
            "estimated_cost_usd": None if cost is None else round(cost, 4),
            "price_source": self.price_source,
        }


def same_vectors(a: str, b: str) -> bool:
    """Whether two recorded model ids name the same embedding model
    (:func:`vectorport.ingest.embedders.same_model`: Chroma's default is all-MiniLM-L6-v2)."""
    if a == b:
        return True
    from ..ingest.embedders import same_model

    return same_model(a, b)


def load_embedder(model: str) -> tuple[Embedder, str]:
    """The embedder for ``model`` and the model id to record on the target collection."""
    from ..ingest.embedders import resolve_embedder

    embedder = resolve_embedder(model)
    return embedder, embedder.model_id


def reembedded(embedder: Embedder, records: Sequence[Record]) -> list[Record]:
    """``records`` with vectors made from their texts by ``embedder`` (its own retry policy,
    each retry reported to the enclosing :func:`~vectorport._retry.retry_scope`)."""
    vectors = embed_texts(embedder, [r.text or "" for r in records])
    return [Record(r.key, vectors[i], r.metadata, r.text) for i, r in enumerate(records)]


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> Vector:
    """Embed ``texts`` as one float32 matrix."""
    return np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
