"""How an opened index maps records to vector metadata: its layout (named, detected or
vectorport's, :mod:`._layout`) and the keys it declares non-filterable, which decide what a
record may hold, what a filter may name and how metadata reads back as metadata and text."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..._capabilities import MetadataRules
from ..._models import Include
from ..._validate import Batch
from ...exceptions import Problem, ValidationError
from ...filters import FilterNode
from ._bucket import BucketClient
from ._layout import BucketLayout, detect, preset
from .filters import S3FilterCompiler

__all__ = ["MetadataMapping"]

log = logging.getLogger("vectorport")

# LlamaIndex's layout holds the metadata twice (beside the node and inside it) plus the node's
# fields: 2 KB (filterable metadata at most) and 1 KB are kept back for the copy and the fields.
_NODE_RESERVE = 2 * 1024 + 1024
_SAMPLE = 20  # vectors read to detect an index's layout


class MetadataMapping:
    """The layout of one index (``requested``: as the URL named it; ``None``: detected on open)
    and its non-filterable keys (known once the index is opened or created)."""

    def __init__(self, requested: BucketLayout | None) -> None:
        self.requested = requested
        self.opened: BucketLayout | None = None
        self.non_filterable: frozenset[str] = frozenset()

    @property
    def layout(self) -> BucketLayout:
        """As opened (named or detected), as asked, or vectorport's."""
        return self.opened or self.requested or preset("vectorport")

    def open(self, bucket: BucketClient, non_filterable: Sequence[str]) -> None:
        """The index exists and declares ``non_filterable``: take the requested layout, or
        detect it from a sample of its vectors."""
        self.non_filterable = frozenset(non_filterable)
        self.opened = self.requested or self._detect(bucket, list(non_filterable))
        if self.opened.text_key not in self.non_filterable:
            log.info(
                "%s: %r is not a non-filterable key of this index; texts over 2 KB cannot be written",
                bucket.where,
                self.opened.text_key,
            )

    def created(self) -> None:
        """vectorport created the index: it declared the layout's text keys non-filterable."""
        self.opened = self.layout
        self.non_filterable = frozenset(self.opened.non_filterable)

    @staticmethod
    def _detect(bucket: BucketClient, non_filterable: list[str]) -> BucketLayout:
        page = bucket.retried(
            "detect layout", "ListVectors", **bucket.ids, maxResults=_SAMPLE, returnMetadata=True
        )
        samples = [item.get("metadata") or {} for item in page.get("vectors", [])]
        layout, warning = detect(non_filterable, samples)
        if warning:
            log.warning("%s: %s", bucket.where, warning)
        return layout

    def rules(self, declared: MetadataRules) -> MetadataRules:
        """The backend's metadata rules narrowed to what this layout leaves a record."""
        layout = self.layout
        return replace(
            declared,
            reserved_keys=layout.reserved_keys,
            max_keys=50 - layout.added_keys,
            max_total_bytes=(declared.max_total_bytes or 0) - (_NODE_RESERVE if layout.node else 0),
        )

    def compile_filter(self, where: FilterNode) -> dict[str, Any]:
        """The service's filter; refuses keys the index cannot filter on (non-filterable, the
        layout's own) before any I/O."""
        return S3FilterCompiler(self.non_filterable | self.layout.reserved_keys).compile_query(where)

    def encode(self, batch: Batch, backend: str) -> list[dict[str, Any]]:
        """Every record's metadata as the layout writes it, each checked against the per-vector
        limits; :class:`ValidationError` naming every record that does not fit."""
        layout, problems = self.layout, []
        metas = []
        for i, (key, meta, text) in enumerate(zip(batch.keys, batch.metadatas, batch.texts, strict=True)):
            encoded = layout.encode(key, text, meta)
            for path, message in layout.size_problems(encoded, self.non_filterable):
                problems.append(Problem(key, path, message, i))
            metas.append(encoded)
        if problems:
            raise ValidationError(problems, backend=backend, hint=f"the index's layout is {layout}")
        return metas

    def problems(
        self, key: str, metadata: dict[str, Any], text: str | None, opened: bool
    ) -> list[tuple[str, str]]:
        """What keeps one record from being written in this layout, as ``(path, message)``;
        ``opened``: the index exists (else it will declare the layout's text keys
        non-filterable when created)."""
        declared = self.non_filterable if opened else frozenset(self.layout.non_filterable)
        return self.layout.size_problems(self.layout.encode(key, text, metadata), declared)

    def decode(
        self, meta: Mapping[str, Any] | None, include: frozenset[Include]
    ) -> tuple[dict[str, Any], str | None]:
        """The user's metadata and the text of one vector's metadata, as ``include`` asks."""
        text, user = self.layout.decode(meta or {})
        return (user if Include.METADATA in include else {}), (text if Include.TEXT in include else None)
