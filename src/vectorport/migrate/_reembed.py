"""``--reembed MODEL``: new vectors from each record's text, through ``vectorport.ingest``'s embedders.

``MODEL`` is an embedder spec as ``vectorport.ingest.embedders.resolve_embedder`` reads it
(``sentence-transformers:all-MiniLM-L6-v2``, ``voyage:voyage-3.5``, ``hash:64``); its
``model_id`` is recorded on the target collection. Where the embedders are not installed, a
migration asked to re-embed is refused before anything is read or written.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._models import Vector
from ..exceptions import UnsupportedFeatureError

__all__ = ["Embedder", "load_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """What the migration needs from an embedder (``vectorport.ingest``'s protocol has more)."""

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Any: ...


_LOADERS = ("resolve_embedder", "load_embedder")


def load_embedder(model: str) -> tuple[Embedder, str]:
    """The embedder for ``model`` and the model id to record on the target collection.

    Raises :class:`~vectorport.exceptions.UnsupportedFeatureError` when the embedders are not
    available in this installation.
    """
    try:
        module = importlib.import_module("vectorport.ingest.embedders")
    except ModuleNotFoundError as exc:
        if exc.name not in ("vectorport.ingest", "vectorport.ingest.embedders"):
            raise UnsupportedFeatureError(
                f"--reembed {model}: the embedder needs the Python module {exc.name!r}; "
                "install it with: pip install 'vectorport[embed]'"
            ) from exc
        raise UnsupportedFeatureError(
            f"--reembed {model}: re-embedding needs vectorport.ingest's embedders, which this "
            "version of vectorport does not ship yet. Migrate without --reembed (vectors are "
            "copied as they are), then re-embed the target once `vectorport ingest` is available."
        ) from None
    for name in _LOADERS:
        loader = getattr(module, name, None)
        if callable(loader):
            embedder = loader(model)
            return embedder, str(getattr(embedder, "model_id", None) or model)
    raise UnsupportedFeatureError(
        f"--reembed {model}: vectorport.ingest.embedders has no loader ({', '.join(_LOADERS)})"
    )


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> Vector:
    """Embed ``texts`` as one float32 matrix."""
    return np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)
