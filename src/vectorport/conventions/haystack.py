"""Haystack's ``PgvectorDocumentStore`` (pgvector-haystack): ``haystack_documents(id
varchar(128) PK, embedding vector(n), content text, blob_data bytea, blob_meta jsonb,
blob_mime_type varchar(255), meta jsonb)`` in schema ``public``. Its keyword search ranks
``ts_rank_cd(to_tsvector(language, content), query)`` with ``language='english'`` by default.
The blob columns are Haystack's ByteStream, not chunk metadata: vectorport leaves them alone
and says so (``info`` and a migration's plan name all three as left out).
"""

from __future__ import annotations

from typing import Final

from ._preset import Preset, TableShape, TextSearch

__all__ = ["PRESETS", "TABLE"]

TABLE: Final = "haystack_documents"
"""``PgvectorDocumentStore(table_name=…)``'s default."""

PRESETS = (
    Preset(
        "haystack",
        "haystack PgvectorDocumentStore",
        pgvector=TableShape(
            key="id",
            embedding="embedding",
            metadata="meta",
            text="content",
            signature=frozenset({"id", "embedding", "content", "meta", "blob_data"}),
            ignored_columns=("blob_data", "blob_meta", "blob_mime_type"),
            left_out_columns=("blob_data", "blob_meta", "blob_mime_type"),
            # KEYWORD_QUERY: plainto_tsquery(language, %s), language="english" by default
            text_search=TextSearch("plain", "english"),
        ),
        priority=35,
    ),
)
