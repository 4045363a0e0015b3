"""``--reembed MODEL``: new vectors from each record's text, through ``vectorport.ingest``'s embedders.

``MODEL`` is an embedder spec as :func:`vectorport.ingest.embedders.resolve_embedder` reads it
(``sentence-transformers:all-MiniLM-L6-v2``, ``voyage:voyage-3.5``, ``hash:64``); its
``model_id`` is recorded on the target collection. The migration engine sees only the core
:class:`vectorport.Embedder` protocol; the embedders (and torch) are imported only when a
migration asks to re-embed, to turn the spec into one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._embedder import Embedder
from .._models import Vector

__all__ = ["Embedder", "embed_texts", "load_embedder"]


def load_embedder(model: str) -> tuple[Embedder, str]:
    """The embedder for ``model`` and the model id to record on the target collection."""
    from ..ingest.embedders import resolve_embedder

    embedder = resolve_embedder(model)
    return embedder, embedder.model_id


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> Vector:
    """Embed ``texts`` as one float32 matrix."""
    return np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
