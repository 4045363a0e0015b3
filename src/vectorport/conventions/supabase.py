"""Supabase's ``documents`` template (the LangChain/LlamaIndex quickstarts):
``documents(id bigserial|uuid PK, content, metadata jsonb, embedding vector(n))``."""

from __future__ import annotations

from ._preset import Preset, TableShape

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "supabase",
        "the Supabase documents template",
        pgvector=TableShape(
            key="id",
            embedding="embedding",
            metadata="metadata",
            text="content",
            signature=frozenset({"id", "content", "metadata", "embedding"}),
        ),
        priority=90,  # the most generic column names: tried last
    ),
)
