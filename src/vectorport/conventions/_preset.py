"""A layout preset as data: where one convention keeps a record's key, vector, text and metadata
on each backend it writes. Every module of :mod:`vectorport.conventions` declares its presets in
``PRESETS``; :func:`presets` finds them (a new preset is one file), and the pgvector, Chroma and
bucket backends read their ``layout=`` choices, detection and shapes from them."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass

__all__ = ["BucketShape", "ChromaShape", "Preset", "TableShape", "TextSearch", "preset", "presets"]


@dataclass(frozen=True)
class TextSearch:
    """How the convention's own keyword search reads a query text, so vectorport's text and
    hybrid search (and ``search``/``compare`` through them) find what the application finds."""

    parser: str = "websearch"
    """``websearch`` (``websearch_to_tsquery``: every word, with quotes, ``or`` and ``-``),
    ``plain`` (``plainto_tsquery``: every word) or ``any`` (the words OR-ed)."""
    language: str | None = None
    """The text search configuration its search uses; ``None``: the table's own (the
    configuration its ``tsvector`` is made with, else ``language=``)."""


@dataclass(frozen=True)
class TableShape:
    """A pgvector table as the convention creates it: the column of each role (``""``: none)."""

    key: str
    embedding: str
    metadata: str
    text: str
    signature: frozenset[str]
    """Columns whose presence together identifies the convention's tables (detection)."""
    key_unique: bool = False
    """Detection also wants the key column unique (vectorport's generic column names)."""
    shared_table: str | None = None
    """The one table every collection shares (a row scope picks the collection)."""
    table_prefix: str = ""
    """Prefixed to the collection name to make the table's (LlamaIndex's ``data_``)."""
    schema: str | None = None
    """The schema its tables live in when the URL names none (``public`` otherwise)."""
    ignored_columns: tuple[str, ...] = ()
    """Columns that are the convention's bookkeeping, neither a role nor metadata."""
    left_out_columns: tuple[str, ...] = ()
    """Those of :attr:`ignored_columns` that hold the application's data no record carries
    (Haystack's ByteStream: the blob with its mime type and meta): ``info`` and a migration's
    plan name them, as they name a ``bytea`` column no role holds."""
    text_search: TextSearch = TextSearch()
    """How the convention's own keyword search matches (AND or OR of the words, its language)."""

    def matches(self, columns: frozenset[str], unique: frozenset[str], table: str) -> bool:
        if self.shared_table is not None and table == self.shared_table:
            return True
        return self.signature <= columns and (not self.key_unique or self.key in unique)

    def roles(self) -> dict[str, str]:
        return {"key": self.key, "embedding": self.embedding, "metadata": self.metadata, "text": self.text}


@dataclass(frozen=True)
class BucketShape:
    """A vector bucket index (S3 Vectors, Supabase): the metadata key holding the text."""

    text_key: str
    node: bool = False
    """The text sits inside a LlamaIndex JSON node under ``text_key``, bookkeeping beside it."""


@dataclass(frozen=True)
class ChromaShape:
    """A Chroma collection: ``documents`` hold the text; ``node`` adds LlamaIndex's node to the
    metadata."""

    node: bool = False


@dataclass(frozen=True)
class Preset:
    """One ``layout=`` value and where it keeps a record on each backend it writes (``None``:
    the convention does not write that backend)."""

    name: str
    written_by: str
    pgvector: TableShape | None = None
    bucket: BucketShape | None = None
    chroma: ChromaShape | None = None
    priority: int = 50
    """Detection order (lower first) where several shapes could match."""


@functools.cache
def presets() -> tuple[Preset, ...]:
    """Every preset of every module of :mod:`vectorport.conventions`, by priority then name.

    >>> [p.name for p in presets() if p.bucket]
    ['vectorport', 'langchain', 'llamaindex', 's3vectors-embed-cli']
    """
    from . import __name__ as package
    from . import __path__ as path

    found: list[Preset] = []
    for info in pkgutil.iter_modules(path):
        if not info.name.startswith("_"):
            found.extend(getattr(importlib.import_module(f"{package}.{info.name}"), "PRESETS", ()))
    return tuple(sorted(found, key=lambda p: (p.priority, p.name)))


def preset(name: str) -> Preset | None:
    """The preset of that ``layout=`` name."""
    return _by_name().get(name)


@functools.cache
def _by_name() -> dict[str, Preset]:
    # a dict, not a search of presets(): a bucket's layout asks once per record read or written
    found: dict[str, Preset] = {}
    for p in presets():
        found.setdefault(p.name, p)  # the first by priority, as a search would find
    return found
