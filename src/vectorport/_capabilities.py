"""What a backend can hold and do, declared once as data on each store class.

Validation, the migration planner, the conformance kit, ``vectorport backends`` and the docs
read these declarations; nobody restates them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ._features import Feature
from ._models import Metric
from ._names import NameRule

__all__ = ["Capabilities", "MetadataRules"]


@dataclass(frozen=True)
class MetadataRules:
    """Which metadata values a backend can store exactly.

    ``None`` for a limit means "no limit vectorport knows of".
    """

    nested_objects: bool = True
    """Dict values (``{"a": {"b": 1}}``)."""
    null: bool = True
    """``None`` values."""
    empty_lists: bool = True
    mixed_lists: bool = True
    """Lists mixing types, or holding lists/objects/null. When False lists must be homogeneous
    lists of str, number or bool."""
    max_keys: int | None = None
    max_list_items: int | None = None
    """Elements of all top-level list values of one record's metadata together (``{"a": [1, 2], "b":
    ["x"]}`` holds 3). Chroma 1.5 writes a record's list elements in one SQLite statement of 6
    bind parameters each, so past 32,766 // 6 = 5,461 the write fails after it was logged and
    the collection stops working."""
    max_total_bytes: int | None = None
    """UTF-8 bytes of the JSON-encoded metadata (plus the text when ``text_in_metadata``)."""
    max_filterable_bytes: int | None = None
    """UTF-8 bytes of the JSON-encoded filterable metadata (all keys but the text key)."""
    text_in_metadata: bool = False
    """The backend stores the chunk text as a (non-filterable) metadata key."""
    max_int: int | None = None
    """Largest absolute integer stored exactly (e.g. 2**53 where numbers are doubles)."""
    float_list_max_int: int | None = None
    """Where a list mixing integers and floats (``[1, 2.5]``) is stored as a list of doubles
    (Chroma), the largest absolute integer such a list may hold and stay exact (2**53)."""
    float_ulps: int = 0
    """Largest difference, in float64 units in the last place, between a float written and
    read back; 0 means exact. Chroma 1.5 parses numbers with serde_json's fast (not correctly
    rounded) algorithm, which moves about one full-precision double in ten by 1 ulp."""
    defaults: tuple[tuple[str, str], ...] = ()
    """Fields the collection gives a record that does not carry them, with their JSON text (an
    application's table column ``source DEFAULT 'import'``): the record reads back with them, so
    a migration's plan counts them as changes and its verification expects them."""
    reserved_keys: frozenset[str] = frozenset()
    reserved_prefixes: tuple[str, ...] = ()
    nul_characters: bool = True
    """Strings (metadata keys and values, and the chunk text) may contain U+0000. PostgreSQL
    ``text`` and ``jsonb`` cannot hold it."""


@dataclass(frozen=True)
class Capabilities:
    """Limits and features of a backend. See ``docs/protocol.md``."""

    metrics: frozenset[Metric]
    max_dimension: int
    max_write_batch: int
    """Records per write call the backend accepts."""
    max_read_batch: int
    """Keys per get call."""
    max_delete_batch: int
    max_scan_page: int
    """Records per scan page."""
    max_top_k: int | None = None
    max_key_bytes: int = 1024
    vector_ulps: int = 0
    """Largest per-element difference, in float32 units in the last place, between a vector
    written and the vector read back; 0 means bit-exact. Chroma's ``cosine`` space stores a
    unit vector and its norm and multiplies back on read, which can move an element by 2 ulps."""
    exact: bool = True
    """Exact search (True) or approximate (ANN)."""
    recall_tolerance: float = 1.0
    """Minimum recall@k vs exact search the backend promises on clustered data."""
    metadata: MetadataRules = field(default_factory=MetadataRules)
    filter_operators: frozenset[str] = frozenset()
    features: frozenset[Feature] = frozenset()
    """What the store can do beyond the protocol: a set of :class:`~vectorport.Feature`, the one
    vocabulary every reader uses."""
    write_rate: float | None = None
    """Records per second the store paces its own writes to (a bucket index's ``write_rate``);
    ``None``: not paced."""
    collection_names: NameRule | None = None
    """The names a collection may have (``None``: any)."""
    text_ranking: str | None = None
    """What ``text_query`` ranks by (its matches' ``score``), with ``text_search``: ``BM25``
    is the reference (:mod:`vectorport._textsearch`: the same results as the memory store);
    any other value is the store's own ranking, for which text and hybrid search guarantee
    against the reference only the filter inside both rankings, the fusion arithmetic and
    candidate depth, and ties by key."""

    def summary(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = asdict(self)
        out["metrics"] = sorted(m.value for m in self.metrics)
        out["filter_operators"] = sorted(self.filter_operators)
        out["features"] = sorted(Feature(f).value for f in self.features)
        rules = out["metadata"]
        rules["reserved_keys"] = sorted(self.metadata.reserved_keys)
        rules["reserved_prefixes"] = list(self.metadata.reserved_prefixes)
        return out
