"""Where a Chroma collection keeps a record's text and metadata: the layout presets.

=============  ==========================================================================
layout         shape
=============  ==========================================================================
``vectorport`` ``documents`` hold the text, ``metadatas`` the metadata (langchain-chroma
               writes the same: ``Document.page_content`` and ``Document.metadata``, so
               ``langchain`` names this layout too)
``llamaindex`` llama-index-vector-stores-chroma: ``documents`` hold the text, ``metadatas``
               the node's metadata plus LlamaIndex's ``_node_content`` (the node as JSON,
               its text emptied), ``_node_type`` and ``document_id``/``doc_id``/``ref_doc_id``
=============  ==========================================================================

The presets are :mod:`vectorport.conventions`' Chroma shapes. A collection's layout is
detected from a sample of its records when the URL names none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..._models import JSON
from ...conventions import llamaindex, preset, presets
from ...exceptions import ConfigurationError

__all__ = ["LAYOUTS", "ChromaLayout", "detect", "layout_option"]

LAYOUTS = tuple(p.name for p in presets() if p.chroma is not None)


@dataclass(frozen=True)
class ChromaLayout:
    """One preset; ``detected`` says how it was found when the URL did not name it."""

    name: str
    detected: str | None = None

    @property
    def node(self) -> bool:
        found = preset(self.name)
        return found is not None and found.chroma is not None and found.chroma.node

    @property
    def reserved_keys(self) -> frozenset[str]:
        """Keys a record's metadata may not use in this layout."""
        return frozenset({llamaindex.NODE_CONTENT, llamaindex.NODE_TYPE}) if self.node else frozenset()

    @property
    def added_keys(self) -> int:
        return 5 if self.node else 0

    def encode(self, key: str, text: str | None, metadata: Mapping[str, JSON]) -> dict[str, JSON]:
        """The stored metadata of one record (the text goes to ``documents`` either way)."""
        if not self.node:
            return dict(metadata)
        return llamaindex.to_node_metadata(key, text, metadata, text_in_node=False)

    def decode(self, meta: Mapping[str, JSON]) -> dict[str, JSON]:
        """The user's metadata of one stored record."""
        return llamaindex.from_node_metadata(meta)[1] if self.node else dict(meta)

    def to_dict(self) -> dict[str, JSON]:
        return {"name": self.name, "detected": self.detected}


def layout_option(value: object) -> ChromaLayout | None:
    """The layout a URL or ``connect()`` names (``None``: detect it)."""
    if value is None:
        return None
    name = str(value).strip().lower()
    if name not in LAYOUTS:
        raise ConfigurationError(f"unknown Chroma layout {value!r}; use one of {', '.join(LAYOUTS)}")
    return ChromaLayout(name)


def detect(samples: Sequence[Mapping[str, JSON] | None]) -> ChromaLayout:
    """LlamaIndex's when any sampled record holds its node, else documents and metadata."""
    nodes = sum(1 for meta in samples if meta and llamaindex.is_node_metadata(meta))
    if nodes:
        name = next(p.name for p in presets() if p.chroma is not None and p.chroma.node)
        return ChromaLayout(name, f"{nodes} of {len(samples)} sampled records")
    return ChromaLayout("vectorport", "default" if not samples else "no LlamaIndex node sampled")
