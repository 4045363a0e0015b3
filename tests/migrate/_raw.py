"""What a collection holds, read with each backend's own client (psycopg, chromadb, boto3), not
through vectorport: ``{key: metadata}`` of every record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np


def _param(url: str, name: str) -> str:
    return parse_qs(urlsplit(url).query)[name][0]


def bucket_client(url: str) -> tuple[Any, dict[str, str]]:
    """A plain boto3 ``s3vectors`` client for a bucket URL of the local server, and the
    ``vectorBucketName``/``indexName`` arguments naming its index."""
    import boto3

    parts = urlsplit(url)
    client = boto3.client(
        "s3vectors",
        endpoint_url=_param(url, "endpoint_url"),
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    return client, {"vectorBucketName": parts.hostname or "", "indexName": parts.path.strip("/")}


def raw_metadata(url: str) -> dict[str, dict[str, Any]]:
    """Every record's key and metadata, read by the backend's plain client."""
    scheme = urlsplit(url).scheme
    if scheme == "pgvector":
        import psycopg
        from psycopg import sql

        from vectorport.backends.pgvector._embedded import embedded_conninfo

        data = url.split("://", 1)[1].split("?")[0]
        with psycopg.connect(embedded_conninfo(Path(data)), autocommit=True) as conn:
            rows = conn.execute(
                sql.SQL("SELECT key, metadata FROM {}").format(sql.Identifier(_param(url, "table")))
            ).fetchall()
        return {str(k): dict(m) for k, m in rows}
    if scheme in ("chroma", "chroma+http"):
        from ..chroma._plain import plain_client

        with plain_client(url) as client:
            got = client.get_collection(_param(url, "collection")).get(include=["metadatas"])
        return {
            k: {mk: mv for mk, mv in (m or {}).items() if not mk.startswith("vectorport:")}
            for k, m in zip(got["ids"], got["metadatas"], strict=True)
        }
    if scheme == "s3vectors":
        client, where = bucket_client(url)
        out: dict[str, dict[str, Any]] = {}
        request: dict[str, Any] = {**where, "returnMetadata": True}
        while True:
            page = client.list_vectors(**request)
            for item in page.get("vectors", []):
                meta = dict(item.get("metadata") or {})
                meta.pop("vectorport_text", None)
                out[item["key"]] = meta
            if not page.get("nextToken"):
                return out
            request["nextToken"] = page["nextToken"]
    # a backend with no client of its own (the in-process stores): what vectorport reads
    import vectorport

    with vectorport.connect(url) as store:
        return {r.key: r.metadata for page in store.scan(include=["metadata"]) for r in page}


def raw_vectors(url: str) -> dict[str, np.ndarray]:
    """Every record's key and float32 vector, read by boto3 or chromadb."""
    scheme = urlsplit(url).scheme
    if scheme in ("chroma", "chroma+http"):
        from ..chroma._plain import plain_client

        with plain_client(url) as client:
            got = client.get_collection(_param(url, "collection")).get(include=["embeddings"])
        return {
            k: np.asarray(v, dtype=np.float32) for k, v in zip(got["ids"], got["embeddings"], strict=True)
        }
    if scheme == "s3vectors":
        client, where = bucket_client(url)
        out: dict[str, np.ndarray] = {}
        request: dict[str, Any] = {**where, "returnData": True}
        while True:
            page = client.list_vectors(**request)
            for item in page.get("vectors", []):
                out[item["key"]] = np.asarray(item["data"]["float32"], dtype=np.float32)
            if not page.get("nextToken"):
                return out
            request["nextToken"] = page["nextToken"]
    raise ValueError(url)


def pg_damage(url: str, gone: str, changed: str, extra: str) -> None:
    """Delete, change and add one record with psycopg, not vectorport."""
    pg_change(url, gone=[gone], changed=[changed], copies={extra: changed})


def pg_change(
    url: str,
    *,
    gone: Sequence[str] = (),
    changed: Sequence[str] = (),
    copies: Mapping[str, str] | None = None,
) -> None:
    """With psycopg, not vectorport: delete the ``gone`` rows, set ``"count": -1`` in the
    metadata of the ``changed`` ones, then add a row per ``copies`` item (new key → the key of
    the row it copies)."""
    import psycopg
    from psycopg import sql

    from vectorport.backends.pgvector._embedded import embedded_conninfo

    name = _param(url, "table")
    table = sql.Identifier(name)
    data = Path(url.split("://", 1)[1].split("?")[0])
    with psycopg.connect(embedded_conninfo(data), autocommit=True) as conn:
        columns = [
            sql.Identifier(r[0])
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND "
                "column_name <> 'key' AND is_generated = 'NEVER'",
                (name,),
            ).fetchall()
        ]
        cols = sql.SQL(", ").join(columns)
        conn.execute(sql.SQL("DELETE FROM {} WHERE key = ANY(%s)").format(table), (list(gone),))
        conn.execute(
            sql.SQL("UPDATE {} SET metadata = metadata || '{{\"count\": -1}}' WHERE key = ANY(%s)").format(
                table
            ),
            (list(changed),),
        )
        for new, old in (copies or {}).items():
            conn.execute(
                sql.SQL("INSERT INTO {} (key, {}) SELECT %s, {} FROM {} WHERE key = %s").format(
                    table, cols, cols, table
                ),
                (new, old),
            )
