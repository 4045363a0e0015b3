"""What ``info()`` says about the table a pgvector store opened: the layout it recognised, what
each role maps to, whether vectorport can write there, and the URL that names it all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode

from ._layouts import MAPPING_OPTIONS, ROLE_OPTION

if TYPE_CHECKING:
    from .store import PgVectorStore

__all__ = ["describe_mapping", "rewritten_url", "suggested_url"]


def rewritten_url(
    store: PgVectorStore, *, drop: tuple[str, ...] = (), add: tuple[tuple[str, str], ...] = ()
) -> str:
    """The store's URL (password masked) without the parameters ``drop`` and with ``add``. What
    comes before ``?`` is kept as given: rebuilt by ``urlunsplit``, an embedded server's
    ``pgvector:///path`` would lose its empty host and no longer open."""
    base, _, query = store.url.masked.partition("?")
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in drop]
    return f"{base}?{urlencode([*params, *add], quote_via=quote, safe='/,*')}"


def suggested_url(store: PgVectorStore) -> str:
    """The store's URL with the layout it was recognised as spelled out (``layout=``), so the
    same table opens the same way without detection, and with what ``connect()`` keywords (a
    SQLAlchemy model's table and roles) said beside the URL; the password stays masked."""
    name = store.layout_name
    named = (("layout", name),) if name and name not in ("custom", "vectorport") else ()
    _, _, query = store.url.masked.partition("?")
    given = {k for k, _ in parse_qsl(query, keep_blank_values=True)}
    mapping = store.mapping
    said: list[tuple[str, str | None]] = [
        ("table", store.collection),
        ("schema", store.schema if store.schema != "public" else None),
        *((ROLE_OPTION[role], column) for role, column in mapping.columns),
        ("key_template", mapping.key_template.text if mapping.key_template else None),
        ("key_expression", mapping.key_expression),
        ("key_field", mapping.key_field),
        ("text_key", mapping.text_key),
        (
            "metadata_columns",
            None if mapping.metadata_columns is None else ",".join(mapping.metadata_columns),
        ),
    ]
    if "collection" in given:
        given.add("table")  # the URL names the collection (and so its table) already
    kept = tuple((k, v) for k, v in said if v is not None and k not in given)
    return rewritten_url(store, drop=("layout",), add=(*kept, *named))


def describe_mapping(store: PgVectorStore) -> dict[str, Any]:
    """The ``mapping`` part of ``info()["pgvector"]``."""
    cols = store.layout.columns
    key: dict[str, Any] = {"kind": cols.key_kind}
    if cols.key_template is not None:
        key = {
            "kind": "template",
            "template": cols.key_template.text,
            "columns": list(cols.key_template.fields),
            "expression": cols.key_expression,
        }
    elif cols.key_field is not None:
        key = {"kind": "field", "field": cols.key_field, "in_column": cols.metadata, "row_id": cols.order}
    elif cols.key_expression:
        key["expression"] = cols.key_expression
    else:
        key["column"] = cols.key
    if cols.key_reason is not None:
        key["chosen"] = cols.key_reason
    if cols.numbered:
        key["kept_in_metadata"] = (
            "vectorport_key (for keys that are not integers; the sequence numbers their rows)"
        )
    if cols.key_kind == "uuid" and cols.keep_key:
        key["kept_in_metadata"] = "vectorport_key (for keys that are not uuids; the row id is their uuid5)"
    if not cols.key_unique and cols.key_template is None:
        key["unique_index"] = False
    metadata: dict[str, Any] = {
        "column": cols.metadata,
        "type": None if cols.metadata is None else "json" if cols.metadata_json else "jsonb",
        "columns": [name for name, _ in cols.metadata_columns],
    }
    if cols.left_out:
        metadata["left_out"] = list(cols.left_out)
    if cols.filled:
        metadata["filled_by_table"] = list(cols.filled)
    if cols.node_metadata:
        metadata["bookkeeping"] = "LlamaIndex node fields (_node_content, _node_type, doc ids) kept out"
    return {
        "mapping": {
            "key": key,
            "embedding": {"column": cols.embedding, "halfvec": cols.halfvec},
            "metadata": metadata,
            "text": {"column": cols.text, "text_key": cols.text_key},
            "scope": cols.scope,
            "own_table": cols.own,
        },
        "writable": cols.read_only is None,
        "read_only_reason": cols.read_only,
        "url": suggested_url(store),
        "options": sorted(MAPPING_OPTIONS),
    }
