"""LangChain's layouts, and its convention for stores that keep the text inside the metadata.

* pgvector, ``langchain``: langchain-postgres ``PGVector``: ``langchain_pg_embedding(id varchar
  PK, collection_id uuid, embedding vector, document, cmetadata jsonb)``, shared by every
  collection (``collection=NAME`` picks one, by its row in ``langchain_pg_collection``);
* pgvector, ``langchain-v2``: langchain-postgres ``PGVectorStore``: one table per collection
  (``langchain_id uuid PK, content, embedding vector(n), langchain_metadata json`` and optional
  plain metadata columns);
* buckets: ``AmazonS3Vectors`` (langchain-aws) stores ``Document.page_content`` under the
  metadata key ``_page_content`` beside ``Document.metadata`` and the document id as the vector
  key; reading pops the key back out (``""`` when it is missing);
* Chroma: langchain-chroma writes ``documents`` and ``metadatas`` as vectorport does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .._models import JSON
from ._preset import BucketShape, ChromaShape, Preset, TableShape, TextSearch

__all__ = [
    "COLLECTIONS_TABLE",
    "PRESETS",
    "SHARED_TABLE",
    "TEXT_KEY",
    "join_page_content",
    "split_page_content",
]

TEXT_KEY: Final = "_page_content"
"""``AmazonS3Vectors(page_content_metadata_key=…)``'s default."""
SHARED_TABLE: Final = "langchain_pg_embedding"
COLLECTIONS_TABLE: Final = "langchain_pg_collection"

PRESETS = (
    Preset(
        "langchain",
        "langchain-postgres PGVector, langchain-aws AmazonS3Vectors, langchain-chroma",
        pgvector=TableShape(
            key="id",
            embedding="embedding",
            metadata="cmetadata",
            text="document",
            signature=frozenset({"id", "collection_id", "embedding", "document", "cmetadata"}),
            shared_table=SHARED_TABLE,
            ignored_columns=("collection_id",),  # the row scope of the collection
        ),
        bucket=BucketShape(TEXT_KEY),
        chroma=ChromaShape(),
        priority=10,
    ),
    Preset(
        "langchain-v2",
        "langchain-postgres PGVectorStore",
        pgvector=TableShape(
            key="langchain_id",
            embedding="embedding",
            metadata="langchain_metadata",
            text="content",
            signature=frozenset({"langchain_id", "content", "embedding", "langchain_metadata"}),
            # HybridSearchConfig's sparse query: plainto_tsquery(tsv_lang, fts_query), every word
            text_search=TextSearch("plain"),
        ),
        priority=11,
    ),
)


def join_page_content(
    text: str | None, metadata: Mapping[str, JSON], *, text_key: str = TEXT_KEY
) -> dict[str, JSON]:
    """The metadata LangChain writes for ``Document(text, metadata=metadata)``.

    LangChain writes the text even when it is empty; a record without text gets no key, which
    LangChain reads as ``""`` all the same.

    >>> join_page_content("hi", {"a": 1})
    {'a': 1, '_page_content': 'hi'}
    """
    out = dict(metadata)
    if text is not None:
        out[text_key] = text
    return out


def split_page_content(
    metadata: Mapping[str, JSON], *, text_key: str = TEXT_KEY
) -> tuple[str | None, dict[str, JSON]]:
    """The text (``None`` when absent or not a string) and the rest of the metadata.

    >>> split_page_content({"a": 1, "_page_content": "hi"})
    ('hi', {'a': 1})
    """
    out = dict(metadata)
    text = out.pop(text_key, None)
    return (text if isinstance(text, str) else None), out
