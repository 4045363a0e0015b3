"""LlamaIndex's node-in-metadata convention.

LlamaIndex vector stores keep a whole node in the metadata: ``node_to_metadata_dict`` (in
``llama_index.core.vector_stores.utils``) writes the user's metadata keys, ``_node_content``
(the node as JSON, embedding nulled, its ``text`` emptied when the store keeps the text
elsewhere), ``_node_type`` (the node class) and the source document's id three times
(``document_id``, ``doc_id``, ``ref_doc_id``; ``"None"`` when the node has no source).
``metadata_dict_to_node`` reads ``_node_content`` back. These functions build and read the
same shape without importing LlamaIndex.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from .._models import JSON
from ..exceptions import Problem, ValidationError
from ._preset import BucketShape, ChromaShape, Preset, TableShape, TextSearch

__all__ = [
    "BOOKKEEPING",
    "DOC_ID_KEYS",
    "NODE_CONTENT",
    "NODE_EXTRAS",
    "NODE_TYPE",
    "PRESETS",
    "TEXT_NODE",
    "from_node_metadata",
    "is_node_metadata",
    "to_node_metadata",
]

NODE_CONTENT: Final = "_node_content"
NODE_TYPE: Final = "_node_type"
TEXT_NODE: Final = "TextNode"
DOC_ID_KEYS: Final = ("ref_doc_id", "doc_id", "document_id")
"""The source document's id as LlamaIndex copies it, in the order vectorport reads it."""
BOOKKEEPING: frozenset[str] = frozenset({NODE_CONTENT, NODE_TYPE, *DOC_ID_KEYS})

PRESETS = (
    Preset(
        "llamaindex",
        "llama-index-vector-stores-postgres, -s3 and -chroma",
        # PGVectorStore: data_<name>(id bigserial PK, text, metadata_ json|jsonb, node_id varchar,
        # embedding vector(n)); node_id is the key
        pgvector=TableShape(
            key="node_id",
            embedding="embedding",
            metadata="metadata_",
            text="text",
            signature=frozenset({"id", "text", "metadata_", "node_id", "embedding"}),
            table_prefix="data_",
            # PGVectorStore's sparse query: to_tsquery(text_search_config, 'w1|w2'), the words OR-ed
            text_search=TextSearch("any"),
        ),
        # S3VectorStore: the node JSON (with its text) under _node_content, bookkeeping beside it
        bucket=BucketShape(NODE_CONTENT, node=True),
        # ChromaVectorStore: the text in documents, the node (text emptied) in the metadata
        chroma=ChromaShape(node=True),
        priority=20,
    ),
)
"""Top-level metadata keys LlamaIndex writes next to the user's own."""
NODE_EXTRAS: Final = "_llamaindex_node"
"""The metadata key (a JSON string) that carries, through any store, what a LlamaIndex node holds
beyond its id, text and metadata when it is not what :func:`to_node_metadata` would make anyway:
its relationships (PREVIOUS/NEXT/PARENT/CHILD …), ``start_char_idx``/``end_char_idx``, the
excluded embed/LLM metadata keys, templates, mimetype and class, and the order of its metadata
keys when they are not in sorted order (LlamaIndex renders them in dict order; jsonb and other
stores reorder a dict's keys, so a node without it gets its keys sorted). Read from a node by
:func:`from_node_metadata`, put back into the node by :func:`to_node_metadata`, so what
``get_content(MetadataMode.X)`` returns is the same after LlamaIndex → any store → LlamaIndex."""
_DERIVED: Final = ("id_", "embedding", "metadata", "text")
"""Node fields a record holds itself (key, vector, metadata, text)."""

_NO_DOC: Final = "None"  # LlamaIndex writes str(None) when a node has no source document
_SOURCE: Final = "1"  # NodeRelationship.SOURCE


def to_node_metadata(
    key: str, text: str | None, metadata: Mapping[str, JSON], *, text_in_node: bool
) -> dict[str, JSON]:
    """The metadata LlamaIndex writes for ``TextNode(id_=key, text=text, metadata=metadata)``.

    Field for field what ``node_to_metadata_dict(node, remove_text=not text_in_node,
    flat_metadata=False)`` produces (llama-index-core 0.14), with one addition: when the
    metadata holds a string ``ref_doc_id``, ``doc_id`` or ``document_id`` (looked up in that
    order), the node gets it as its source document, so LlamaIndex's ``node.ref_doc_id`` and
    ``delete(ref_doc_id)`` find it and the three top-level copies carry it instead of ``"None"``.

    Parameters
    ----------
    key
        The node id (the record key).
    text
        The chunk text; ``None`` is stored as LlamaIndex's empty text.
    metadata
        The user's metadata; it must not use ``_node_content`` or ``_node_type``.
    text_in_node
        Whether the text goes into ``_node_content`` (stores without a text column: S3,
        Chroma's metadata) or is left empty there (stores with one: pgvector's ``text``).

    Examples
    --------
    >>> meta = to_node_metadata("k1", "hello", {"lang": "en"}, text_in_node=True)
    >>> sorted(meta)
    ['_node_content', '_node_type', 'doc_id', 'document_id', 'lang', 'ref_doc_id']
    >>> from_node_metadata(meta)
    ('hello', {'lang': 'en'})
    """
    _refuse_bookkeeping(key, metadata)
    extras, order = _extras_of(key, metadata)
    metadata = _ordered({k: v for k, v in metadata.items() if k != NODE_EXTRAS}, order)
    source = _source_of(metadata) or _node_source(extras)
    if source is not None and metadata.get("ref_doc_id") == source:
        # LlamaIndex keeps the source document in the node's relationships, not its metadata
        # (node.ref_doc_id); in the metadata it would show in get_content() and the LLM's prompt
        metadata = {k: v for k, v in metadata.items() if k != "ref_doc_id"}
    node = _text_node(key, (text or "") if text_in_node else "", metadata, source)
    node.update({k: v for k, v in extras.items() if k not in _DERIVED})
    out: dict[str, JSON] = dict(metadata)
    out[NODE_CONTENT] = json.dumps(node, ensure_ascii=False)
    out[NODE_TYPE] = node["class_name"] if isinstance(node.get("class_name"), str) else TEXT_NODE
    doc = source if source is not None else _NO_DOC
    out["document_id"] = doc
    out["doc_id"] = doc
    out["ref_doc_id"] = doc
    return out


def _refuse_bookkeeping(key: str, metadata: Mapping[str, JSON]) -> None:
    """Refuse user metadata that uses the keys LlamaIndex writes its node under."""
    taken = sorted((BOOKKEEPING - set(DOC_ID_KEYS)) & metadata.keys())
    if taken:
        raise ValidationError(
            [Problem(key, f"metadata.{name}", "is LlamaIndex's own key") for name in taken],
            hint="rename these metadata keys; LlamaIndex writes its node there",
        )


def _text_node(key: str, text: str, metadata: Mapping[str, JSON], source: str | None) -> dict[str, JSON]:
    """``TextNode(id_=key, text=text, metadata=metadata).model_dump(mode="json")``, with
    ``source`` as its source document."""
    relationships: dict[str, JSON] = {}
    if source is not None:
        relationships[_SOURCE] = {
            "node_id": source,
            "node_type": None,
            "metadata": {},
            "hash": None,
            "class_name": "RelatedNodeInfo",
        }
    # The key order of TextNode.model_dump(mode="json"), so the JSON is byte-identical.
    return {
        "id_": key,
        "embedding": None,
        "metadata": dict(metadata),
        "excluded_embed_metadata_keys": [],
        "excluded_llm_metadata_keys": [],
        "relationships": relationships,
        "metadata_template": "{key}: {value}",
        "metadata_separator": "\n",
        "text": text,
        "mimetype": "text/plain",
        "start_char_idx": None,
        "end_char_idx": None,
        "text_template": "{metadata_str}\n\n{content}",
        "class_name": TEXT_NODE,
    }


def from_node_metadata(meta: Mapping[str, JSON]) -> tuple[str | None, dict[str, JSON]]:
    """The chunk text and the user's metadata out of LlamaIndex's node metadata.

    The text is the node's ``text`` (``None`` when there is no node or its text is empty:
    the store keeps it elsewhere). The metadata is ``meta`` without ``_node_content`` and
    ``_node_type``; of the document-id copies, those the node's own metadata holds keep the
    user's value, the others are LlamaIndex's and dropped, except that a real source document
    (not ``"None"``) is kept once, as ``ref_doc_id``, so a migration does not lose it. Without
    a node, document-id keys are dropped only when they are ``"None"``.

    ``from_node_metadata(to_node_metadata(k, t, m, text_in_node=True)) == (t, m)`` for any
    text ``t`` (``None`` for ``""``) and user metadata ``m``.

    Raises
    ------
    ValidationError
        ``_node_content`` is not a JSON object.
    """
    node = _parse_node(meta)
    out = {k: v for k, v in meta.items() if k not in BOOKKEEPING}
    if node is None:
        out.update({k: meta[k] for k in DOC_ID_KEYS if k in meta and meta[k] != _NO_DOC})
        return None, out
    text = node.get("text")
    own = node.get("metadata")
    own = own if isinstance(own, dict) else {}
    mine = {k: own[k] for k in DOC_ID_KEYS if k in own}
    out.update(mine)
    # the top-level copies are LlamaIndex's only when the node's metadata holds none of them
    source = _node_source(node) or next(
        (
            str(meta[k])
            for k in DOC_ID_KEYS
            if not mine and isinstance(meta.get(k), str) and meta[k] != _NO_DOC
        ),
        None,
    )
    if source is not None and _source_of(mine) != source and "ref_doc_id" not in mine:
        out["ref_doc_id"] = source  # a source the node's own ids do not give
    extras = _node_extras(node, out)
    if extras is not None:
        out[NODE_EXTRAS] = extras
    return (text if isinstance(text, str) and text else None), out


def _node_extras(node: Mapping[str, JSON], metadata: Mapping[str, JSON]) -> str | None:
    """:data:`NODE_EXTRAS` for ``node``: its fields beyond id, text and metadata, as JSON, when
    they are not exactly what :func:`to_node_metadata` makes from the record's ``metadata``
    (``None`` then: a node vectorport or a plain pipeline wrote carries nothing more)."""
    plain = to_node_metadata(str(node.get("id_") or ""), None, metadata, text_in_node=False)
    made = json.loads(str(plain[NODE_CONTENT]))
    fields = {k: v for k, v in node.items() if k not in _DERIVED}
    own = node.get("metadata")
    order = list(own) if isinstance(own, dict) else []
    extras: dict[str, JSON] = {}
    if fields != {k: v for k, v in made.items() if k not in _DERIVED}:
        extras["node"] = fields
    if order != sorted(order):
        extras["metadata_order"] = list(order)
    return json.dumps(extras, ensure_ascii=False, sort_keys=True) if extras else None


def _ordered(metadata: dict[str, JSON], order: list[str]) -> dict[str, JSON]:
    """``metadata`` with its keys in ``order`` (those it names), then the others sorted."""
    out = {k: metadata[k] for k in order if k in metadata}
    out.update({k: metadata[k] for k in sorted(metadata) if k not in out})
    return out


def _extras_of(key: str, metadata: Mapping[str, JSON]) -> tuple[dict[str, JSON], list[str]]:
    """The node fields a :data:`NODE_EXTRAS` carries, and its metadata keys' order."""
    raw = metadata.get(NODE_EXTRAS)
    if raw is None:
        return {}, []
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        data = None
    if (
        not isinstance(data, dict)
        or not ({"node", "metadata_order"} & data.keys())
        or not isinstance(data.get("node", {}), dict)
        or not isinstance(data.get("metadata_order", []), list)
    ):
        raise ValidationError(
            [
                Problem(
                    key, f"metadata.{NODE_EXTRAS}", f"is not a LlamaIndex node's fields: {str(raw)[:80]!r}"
                )
            ],
            hint=f"remove {NODE_EXTRAS} (vectorport keeps a LlamaIndex node's own fields there)",
        )
    return dict(data.get("node", {})), [str(k) for k in data.get("metadata_order", [])]


def is_node_metadata(meta: Mapping[str, JSON]) -> bool:
    """Whether ``meta`` looks like LlamaIndex's: a ``_node_content`` string beside ``_node_type``."""
    return isinstance(meta.get(NODE_CONTENT), str) and NODE_TYPE in meta


def _source_of(metadata: Mapping[str, JSON]) -> str | None:
    for name in DOC_ID_KEYS:
        value = metadata.get(name)
        if isinstance(value, str) and value and value != _NO_DOC:
            return value
    return None


def _node_source(node: Mapping[str, JSON]) -> str | None:
    rels = node.get("relationships")
    source = rels.get(_SOURCE) if isinstance(rels, dict) else None
    node_id = source.get("node_id") if isinstance(source, dict) else None
    return node_id if isinstance(node_id, str) and node_id else None


def _parse_node(meta: Mapping[str, JSON]) -> dict[str, JSON] | None:
    raw = meta.get(NODE_CONTENT)
    if raw is None:
        return None
    try:
        node = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        node = None
    if not isinstance(node, dict):
        raise ValidationError(
            [Problem(None, NODE_CONTENT, f"is not LlamaIndex's node JSON: {str(raw)[:80]!r}")],
            outcome="the record cannot be read as a LlamaIndex node",
            hint="read this store with another layout (layout=vectorport or text_key=…)",
        )
    return node
