"""Supabase ``vecs``: schema ``vecs``, one table per collection, ``<name>(id varchar PK, vec
vector(n), metadata jsonb)``, no text."""

from __future__ import annotations

from ._preset import Preset, TableShape

__all__ = ["PRESETS"]

PRESETS = (
    Preset(
        "vecs",
        "supabase vecs",
        pgvector=TableShape(
            key="id",
            embedding="vec",
            metadata="metadata",
            text="",
            signature=frozenset({"id", "vec", "metadata"}),
            schema="vecs",
        ),
        priority=40,
    ),
)
