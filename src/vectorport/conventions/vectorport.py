"""vectorport's own layout on each backend.

pgvector: ``key text PK, embedding vector(n), metadata jsonb, text, fts, updated_at``;
buckets: the text under ``vectorport_text`` (declared non-filterable); Chroma: ``documents``
hold the text, ``metadatas`` the metadata.
"""

from __future__ import annotations

from typing import Final

from ._preset import BucketShape, ChromaShape, Preset, TableShape

__all__ = ["PRESETS", "TEXT_KEY"]

TEXT_KEY: Final = "vectorport_text"

PRESETS = (
    Preset(
        "vectorport",
        "vectorport",
        pgvector=TableShape(
            key="key",
            embedding="embedding",
            metadata="metadata",
            text="text",
            signature=frozenset({"key", "embedding", "metadata", "text"}),
            key_unique=True,
        ),
        bucket=BucketShape(TEXT_KEY),
        chroma=ChromaShape(),
        priority=0,
    ),
)
