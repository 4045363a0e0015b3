"""Where a bucket index keeps the chunk text: the layout presets and their detection.

A vector bucket has no schema, so every tool picks its own metadata key for the text (the
presets are :mod:`vectorport.conventions`' bucket shapes):

==========================  ===============================  =====================================
layout                      text                             written by
==========================  ===============================  =====================================
``vectorport``              ``vectorport_text``              vectorport
``langchain``               ``_page_content``                langchain-aws ``AmazonS3Vectors``
``llamaindex``              ``_node_content`` (a JSON node)  llama-index-vector-stores-s3
``s3vectors-embed-cli``     ``S3VECTORS-EMBED-SRC-CONTENT``  awslabs s3vectors-embed-cli
``text_key=KEY``            ``KEY``                          anything else
==========================  ===============================  =====================================

Each declares its text field(s) non-filterable when vectorport creates the index, as the
framework itself does (LlamaIndex: ``_node_content`` and ``_node_type``; the embed CLI's README
asks for its content key). When a URL names no layout, :func:`detect` reads it from the index's
non-filterable keys and a sample of its vectors.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..._json import json_size
from ..._models import JSON
from ...conventions import llamaindex, presets, s3vectors_embed_cli, vectorport
from ...conventions import preset as convention
from ...conventions.langchain import join_page_content, split_page_content
from ...exceptions import ConfigurationError

__all__ = ["LAYOUTS", "BucketLayout", "detect", "layout_option"]

VECTORPORT_TEXT = vectorport.TEXT_KEY
EMBED_CLI_TEXT = s3vectors_embed_cli.TEXT_KEY
TEXT_KEY_LAYOUT = "text_key"
MAX_FILTERABLE_BYTES = 2 * 1024
MAX_TOTAL_BYTES = 40 * 1024
MAX_KEYS = 50
EMPTY_TEXT = "vectorport:empty_text"
"""Beside a LlamaIndex node whose text is ``""`` because the record's text is ``""``, not missing
(a node's text is never null, so only this key tells the two apart; LlamaIndex reads the node
alone and never sees it)."""

_TEXT_KEYS = {p.name: p.bucket.text_key for p in presets() if p.bucket is not None}
LAYOUTS = tuple(_TEXT_KEYS)
"""The preset names, for ``layout=``."""


@dataclass(frozen=True)
class BucketLayout:
    """One way of laying a record out in a vector's metadata.

    ``name`` is a preset or ``"text_key"``; ``text_key`` the metadata key of the text (for
    ``llamaindex`` the node JSON that holds it); ``detected`` says how the layout was found
    when the URL did not name it.
    """

    name: str
    text_key: str
    detected: str | None = None

    @functools.cached_property  # asked once per record read or written
    def node(self) -> bool:
        """LlamaIndex's layout: the text inside a JSON node, bookkeeping keys beside it."""
        found = convention(self.name)
        return found is not None and found.bucket is not None and found.bucket.node

    @property
    def non_filterable(self) -> tuple[str, ...]:
        """The keys declared non-filterable when vectorport creates an index in this layout."""
        if self.node:
            return (llamaindex.NODE_CONTENT, llamaindex.NODE_TYPE)
        return (self.text_key,)

    @property
    def reserved_keys(self) -> frozenset[str]:
        """Metadata keys a record may not use: the layout writes them."""
        return frozenset(self.non_filterable) | ({EMPTY_TEXT} if self.node else set())

    @property
    def added_keys(self) -> int:
        """Metadata keys the layout adds to a record at most (LlamaIndex: node, type, ref_doc_id
        and the empty-text mark)."""
        return 4 if self.node else 1

    def encode(self, key: str, text: str | None, metadata: Mapping[str, JSON]) -> dict[str, JSON]:
        """The vector's metadata for one record."""
        if not self.node:
            return join_page_content(text, metadata, text_key=self.text_key)
        out = llamaindex.to_node_metadata(key, text, metadata, text_in_node=True)
        for copy in ("document_id", "doc_id"):
            # llama-index-vector-stores-s3 keeps only ref_doc_id of the three copies (to save
            # metadata space); a key of the user's own stays.
            if copy not in metadata:
                del out[copy]
        if text == "":
            out[EMPTY_TEXT] = True
        return out

    def decode(self, meta: Mapping[str, JSON]) -> tuple[str | None, dict[str, JSON]]:
        """The text and the user's metadata of one vector's metadata."""
        if self.node:
            text, user = llamaindex.from_node_metadata(meta)
            if user.pop(EMPTY_TEXT, None) is True and text is None:
                text = ""
            return text, user
        return split_page_content(meta, text_key=self.text_key)

    def size_problems(
        self, encoded: Mapping[str, JSON], non_filterable: Collection[str]
    ) -> list[tuple[str, str]]:
        """What in one vector's encoded metadata breaks AWS's per-vector limits, as
        ``(path, message)``; ``non_filterable`` is the index's declared set."""
        out: list[tuple[str, str]] = []
        total = json_size(dict(encoded))
        filterable = {k: v for k, v in encoded.items() if k not in non_filterable}
        # a part of the metadata is no bigger than the whole: measured only when it may be too big
        size = json_size(filterable) if filterable and total > MAX_FILTERABLE_BYTES else 0
        if size > MAX_FILTERABLE_BYTES:
            if self.text_key in filterable:
                out.append(
                    (
                        f"metadata.{self.text_key}",
                        f"this index does not declare {self.text_key!r} non-filterable (LangChain's "
                        "default when it creates an index), so the text counts against the 2 KB of "
                        f"filterable metadata: this record needs {size} bytes; write to an index "
                        f"created with {self.text_key!r} non-filterable (vectorport creates one so "
                        "with this layout; AmazonS3Vectors(non_filterable_metadata_keys=[…]) too)",
                    )
                )
            else:
                out.append(
                    ("metadata", f"{size} bytes of filterable metadata; the limit is {MAX_FILTERABLE_BYTES}")
                )
        if total > MAX_TOTAL_BYTES:
            what = "metadata, text and LlamaIndex's node" if self.node else "metadata and text"
            out.append(("metadata", f"{total} bytes of {what}; the limit is {MAX_TOTAL_BYTES}"))
        if len(encoded) > MAX_KEYS:
            out.append(
                ("metadata", f"{len(encoded)} metadata keys with the layout's; the limit is {MAX_KEYS}")
            )
        return out

    def to_dict(self) -> dict[str, JSON]:
        """A JSON-ready description (``vectorport info``)."""
        return {"name": self.name, "text_key": self.text_key, "detected": self.detected}

    def __str__(self) -> str:
        name = self.name if self.name != TEXT_KEY_LAYOUT else f"text_key={self.text_key}"
        return name + (f" (detected: {self.detected})" if self.detected else "")


def preset(name: str, detected: str | None = None) -> BucketLayout:
    """A preset by name."""
    return BucketLayout(name, _TEXT_KEYS[name], detected)


def custom(text_key: str, detected: str | None = None) -> BucketLayout:
    """The layout of a preset that keeps its text under ``text_key``, else a plain text key."""
    for name, key in _TEXT_KEYS.items():
        if key == text_key:
            return preset(name, detected)
    return BucketLayout(TEXT_KEY_LAYOUT, text_key, detected)


def layout_option(layout: str | None, text_key: str | None) -> BucketLayout | None:
    """The layout the URL or ``connect()`` names (``None``: detect it)."""
    if layout is not None:
        name = str(layout).strip().lower()
        if name not in _TEXT_KEYS:
            raise ConfigurationError(
                f"unknown bucket layout {layout!r}; use one of {', '.join(LAYOUTS)}, or text_key=KEY "
                "for the metadata key that holds the text"
            )
        chosen = preset(name)
        if text_key is not None and text_key != chosen.text_key:
            raise ConfigurationError(
                f"layout={name} keeps the text under {chosen.text_key!r}, not text_key={text_key!r}; "
                "pass one of the two"
            )
        return chosen
    if text_key is not None:
        if not str(text_key):
            raise ConfigurationError("text_key= names the metadata key that holds the text; it is empty")
        return custom(str(text_key))
    return None


def _node_layout() -> str:
    return next(p.name for p in presets() if p.bucket is not None and p.bucket.node)


def _plain_layouts() -> list[str]:
    """Presets keeping the text as a plain string, the most specific first (the default last)."""
    plain = [p.name for p in presets() if p.bucket is not None and not p.bucket.node]
    return sorted(plain, key=lambda name: name == "vectorport")


def _layout_of(meta: Mapping[str, JSON]) -> str | None:
    if llamaindex.is_node_metadata(meta):
        return _node_layout()
    for name in _plain_layouts():
        if isinstance(meta.get(_TEXT_KEYS[name]), str):
            return name
    return None


def detect(
    non_filterable: Sequence[str], samples: Sequence[Mapping[str, JSON]]
) -> tuple[BucketLayout, str | None]:
    """The layout of an index from its non-filterable keys and a sample of its vectors'
    metadata, and a warning when the sample is mixed.

    What the vectors hold wins over the index's declaration (LangChain creates its indexes
    without non-filterable keys); an empty index goes by its declaration, an undeclared empty
    index is vectorport's.
    """
    votes = Counter(name for meta in samples if (name := _layout_of(meta)) is not None)
    warning = None
    if votes:
        (name, count), *others = votes.most_common()
        if others:
            mix = ", ".join(f"{n}: {c}" for n, c in votes.most_common())
            warning = f"the sampled vectors mix layouts ({mix}); reading as {name}: pass layout= to choose"
        return preset(name, f"{count} of {len(samples)} sampled vectors"), warning
    declared = set(non_filterable)
    if llamaindex.NODE_CONTENT in declared:
        return preset(_node_layout(), "non-filterable keys"), None
    for name in _plain_layouts():
        if _TEXT_KEYS[name] in declared:
            return preset(name, "non-filterable keys"), None
    strings = [k for k in non_filterable if any(isinstance(m.get(k), str) for m in samples)]
    if len(non_filterable) == 1 and (strings or not samples):
        return custom(non_filterable[0], "the only non-filterable key"), None
    return preset("vectorport", "default" if not samples else "no known text key sampled"), None
