"""The Chroma store's collaborators on their own, without a store: ``ChromaConnection`` on a real
embedded directory, ``RecordMapping`` with no I/O at all."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from vectorport import Include
from vectorport._validate import Batch
from vectorport.backends.chroma import ChromaStore
from vectorport.backends.chroma._client import DATABASE_FILE, MAX_BATCH, ChromaConnection
from vectorport.backends.chroma._layout import ChromaLayout
from vectorport.backends.chroma._mapping import RecordMapping
from vectorport.backends.chroma._write import NO_TEXT
from vectorport.exceptions import ConfigurationError, NotFoundError

pytestmark = pytest.mark.chroma

ALL = frozenset(Include)


def test_connection_makes_an_embedded_client_only_when_used(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    conn = ChromaConnection("docs", "chroma collection 'docs' (test)", path=path)
    assert not conn.has_database()
    with pytest.raises(NotFoundError, match=r"no Chroma database in .*check the path"):
        conn.check_database()
    assert not os.path.exists(path)  # refusing to open made nothing
    with pytest.raises(NotFoundError, match=r"chroma collection 'docs' \(test\): open"):
        conn.collection()  # the client is made now, the collection is not there
    assert conn.has_database() and os.path.isfile(os.path.join(path, DATABASE_FILE))
    assert 1 <= conn.batch <= MAX_BATCH
    conn.coll = conn.api().create_collection("docs", embedding_function=None)
    assert conn.collection().name == "docs"
    conn.close()
    with pytest.raises(ConfigurationError, match="is closed"):
        conn.api()


def test_record_mapping_round_trips_llamaindex_nodes_without_io() -> None:
    mapping = RecordMapping(ChromaLayout("llamaindex"))
    caps = mapping.capabilities(ChromaStore.capabilities)
    assert {"_node_content", "_node_type"} <= caps.metadata.reserved_keys
    batch = Batch(["a"], np.zeros((1, 2), np.float32), [{"lang": "en"}], ["hello"])
    stored = mapping.encode(batch).metadatas[0]
    assert "_node_content" in stored and stored["lang"] == "en"
    res = {"ids": ["a"], "metadatas": [stored], "documents": ["hello"], "embeddings": [[1.0, 2.0]]}
    (rec,) = mapping.records(res, ALL)
    assert (rec.key, rec.metadata, rec.text) == ("a", {"lang": "en"}, "hello")
    assert rec.vector is not None and rec.vector.tolist() == [1.0, 2.0]
    (bare,) = mapping.records(res, frozenset({Include.TEXT}))
    assert (bare.metadata, bare.text, bare.vector) == ({}, "hello", None)


def test_record_mapping_reads_the_no_text_marker_as_no_text() -> None:
    mapping = RecordMapping(None)  # not opened: vectorport's layout
    assert mapping.layout.name == "vectorport"
    assert mapping.decode({"lang": "en", NO_TEXT: True}, "") == ({"lang": "en"}, None)
    assert mapping.decode(None, "hi") == ({}, "hi")
