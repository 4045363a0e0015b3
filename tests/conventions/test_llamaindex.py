"""LlamaIndex's node metadata, built and read without LlamaIndex.

The pinned ``_node_content`` below is what llama-index-core 0.14's
``node_to_metadata_dict(TextNode(id_="k1", text="héllo", metadata={"lang": "en"}))`` writes;
``tests/interop/test_conventions.py`` compares against the real function.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorport.conventions.llamaindex import (
    BOOKKEEPING,
    from_node_metadata,
    is_node_metadata,
    to_node_metadata,
)
from vectorport.exceptions import ValidationError

PINNED = (
    '{"id_": "k1", "embedding": null, "metadata": {"lang": "en"}, "excluded_embed_metadata_keys": [], '
    '"excluded_llm_metadata_keys": [], "relationships": {}, "metadata_template": "{key}: {value}", '
    '"metadata_separator": "\\n", "text": "héllo", "mimetype": "text/plain", "start_char_idx": null, '
    '"end_char_idx": null, "text_template": "{metadata_str}\\n\\n{content}", "class_name": "TextNode"}'
)


def test_the_node_is_byte_for_byte_what_llamaindex_writes() -> None:
    meta = to_node_metadata("k1", "héllo", {"lang": "en"}, text_in_node=True)
    assert meta == {
        "lang": "en",
        "_node_content": PINNED,
        "_node_type": "TextNode",
        "document_id": "None",
        "doc_id": "None",
        "ref_doc_id": "None",
    }
    assert list(meta) == ["lang", "_node_content", "_node_type", "document_id", "doc_id", "ref_doc_id"]


def test_text_kept_elsewhere_leaves_the_node_text_empty() -> None:
    meta = to_node_metadata("k1", "héllo", {"lang": "en"}, text_in_node=False)
    assert json.loads(meta["_node_content"])["text"] == ""
    assert from_node_metadata(meta) == (None, {"lang": "en"})


def test_a_document_id_in_the_metadata_becomes_the_nodes_source() -> None:
    meta = to_node_metadata("k1", "t", {"doc_id": "handbook.pdf"}, text_in_node=True)
    node = json.loads(meta["_node_content"])
    assert node["relationships"]["1"]["node_id"] == "handbook.pdf"
    assert (meta["document_id"], meta["doc_id"], meta["ref_doc_id"]) == ("handbook.pdf",) * 3
    assert from_node_metadata(meta) == ("t", {"doc_id": "handbook.pdf"})


def test_a_source_document_written_by_llamaindex_is_kept_once() -> None:
    # llama-index-vector-stores-s3 drops document_id and doc_id and keeps ref_doc_id
    meta = to_node_metadata("k1", "t", {"ref_doc_id": "src"}, text_in_node=True)
    node = json.loads(meta["_node_content"])
    node["metadata"] = {"page": 3}
    written = {"page": 3, "_node_content": json.dumps(node), "_node_type": "TextNode", "ref_doc_id": "src"}
    assert from_node_metadata(written) == ("t", {"page": 3, "ref_doc_id": "src"})


def test_the_users_own_document_id_keys_keep_their_values() -> None:
    user = {"doc_id": "a", "document_id": "b"}
    meta = to_node_metadata("k", "t", user, text_in_node=True)
    assert meta["document_id"] == "a"  # LlamaIndex's copy of the source, at top level
    assert from_node_metadata(meta) == ("t", user)


def test_metadata_without_a_node_drops_only_none_document_ids() -> None:
    assert from_node_metadata({"a": 1, "doc_id": "None", "ref_doc_id": "r"}) == (
        None,
        {"a": 1, "ref_doc_id": "r"},
    )
    assert not is_node_metadata({"a": 1})


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", 7])
def test_a_broken_node_is_named(bad: Any) -> None:
    with pytest.raises(ValidationError, match="_node_content"):
        from_node_metadata({"_node_content": bad, "_node_type": "TextNode"})


@pytest.mark.parametrize("name", ["_node_content", "_node_type"])
def test_metadata_may_not_use_llamaindex_keys(name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        to_node_metadata("k", "t", {name: "x"}, text_in_node=True)


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_user_keys = st.text(min_size=1, max_size=12).filter(lambda k: k not in BOOKKEEPING) | st.sampled_from(
    ["doc_id", "ref_doc_id", "document_id"]
)


@given(
    key=st.text(min_size=1, max_size=20),
    text=st.none() | st.text(min_size=1),
    metadata=st.dictionaries(_user_keys, _values, max_size=6),
)
def test_round_trip(key: str, text: str | None, metadata: dict[str, Any]) -> None:
    meta = to_node_metadata(key, text, metadata, text_in_node=True)
    assert is_node_metadata(meta)
    assert from_node_metadata(meta) == (text, metadata)
    assert json.loads(meta["_node_content"])["id_"] == key
