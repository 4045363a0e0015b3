"""How a collection maps records to Chroma's ``ids``/``embeddings``/``metadatas``/``documents``:
its layout (named, detected on open, or vectorport's; :mod:`._layout`) and the read side of the
no-text marker (:func:`._write.split_text`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._capabilities import Capabilities
from ..._models import Include, Record
from ..._validate import Batch
from ._layout import ChromaLayout, detect
from ._write import split_text

__all__ = ["INCLUDES", "RecordMapping", "fields"]

INCLUDES: dict[Include, str] = {
    Include.METADATA: "metadatas",
    Include.TEXT: "documents",
    Include.VECTOR: "embeddings",
}
_SAMPLE = 20  # records read to detect a collection's layout


def fields(include: frozenset[Include]) -> list[str]:
    """What to ask Chroma for: the text needs the metadata too (the no-text marker)."""
    wanted = {INCLUDES[i] for i in include}
    if Include.TEXT in include:
        wanted.add("metadatas")
    return sorted(wanted)


class RecordMapping:
    """The layout of one collection (``requested``: as the URL named it; ``None``: detected on
    open) and the translation of records to and from what Chroma stores."""

    def __init__(self, requested: ChromaLayout | None) -> None:
        self.requested = requested
        self.opened: ChromaLayout | None = None

    @property
    def layout(self) -> ChromaLayout:
        """As opened (named or detected), as asked, or vectorport's."""
        return self.opened or self.requested or ChromaLayout("vectorport")

    def open(self, coll: Any) -> None:
        """The collection exists: detect its layout from a sample when none was named (the
        caller maps Chroma's errors)."""
        if self.requested is None:
            sample = coll.get(limit=_SAMPLE, include=["metadatas"])["metadatas"] or []
            self.opened = detect(sample)

    def capabilities(self, declared: Capabilities) -> Capabilities:
        """``declared`` with the metadata keys LlamaIndex's layout takes reserved."""
        layout = self.layout
        if not layout.node:
            return declared
        rules = declared.metadata
        rules = dataclasses.replace(
            rules,
            reserved_keys=rules.reserved_keys | layout.reserved_keys,
            max_keys=(rules.max_keys or 0) - layout.added_keys,
        )
        return dataclasses.replace(declared, metadata=rules)

    def encode(self, batch: Batch) -> Batch:
        """``batch`` with its metadata as the layout stores it."""
        layout = self.layout
        if not layout.node:
            return batch
        rows = zip(batch.keys, batch.texts, batch.metadatas, strict=True)
        metas = [layout.encode(key, text, meta) for key, text, meta in rows]
        return dataclasses.replace(batch, metadatas=metas)

    def decode(self, meta: dict[str, Any] | None, doc: str | None) -> tuple[dict[str, Any], str | None]:
        """The user's metadata and the text of one stored record."""
        user, text = split_text(meta, doc)
        return self.layout.decode(user), text

    def records(self, res: Mapping[str, Any], include: frozenset[Include]) -> list[Record]:
        """The records of a ``get`` result, with what ``include`` asks for."""
        ids: list[str] = res["ids"]
        vectors = res.get("embeddings") if Include.VECTOR in include else None
        if vectors is not None and ids:
            vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        metas = res.get("metadatas") or [None] * len(ids)
        docs = res.get("documents") or [None] * len(ids)
        out = []
        for i, key in enumerate(ids):
            meta, text = self.decode(metas[i], docs[i])
            out.append(
                Record(
                    key,
                    None if vectors is None else vectors[i],
                    meta if Include.METADATA in include else {},
                    text if Include.TEXT in include else None,
                )
            )
        return out
