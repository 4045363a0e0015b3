"""A node's metadata keeps its key order through any store: LlamaIndex renders it in dict order
(``get_content(MetadataMode.LLM)``, ``EMBED``), and jsonb reorders keys (shorter first), so
after Chroma → pgvector the text an LLM or an embedder saw once changed for most nodes although
the dict was equal. The order travels with the node's other fields."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport.llamaindex import LlamaIndexStore

pytestmark = [pytest.mark.pgvector, pytest.mark.chroma]
schema = pytest.importorskip("llama_index.core.schema")
li_chroma = pytest.importorskip("llama_index.vector_stores.chroma")
chromadb = pytest.importorskip("chromadb")

_names = itertools.count()
KEYS = ["title", "author", "year", "section", "a", "zz_last", "lang"]


def _nodes() -> list[Any]:
    rng = np.random.default_rng(5)
    nodes = []
    for i in range(30):
        keys = KEYS[i % 3 :] + KEYS[: i % 3]  # a different order for each third of the nodes
        metadata = {k: f"{k} {i}" if k != "year" else 1800 + i for k in keys}
        node = schema.TextNode(id_=f"n{i}", text=f"chunk {i} of the handbook", metadata=metadata)
        node.embedding = [float(x) for x in rng.standard_normal(4)]
        nodes.append(node)
    return nodes


def test_metadata_order_survives_chroma_to_pgvector(chroma_dir: str, url_for: Any) -> None:
    nodes = _nodes()
    name = f"li_order_{next(_names)}"
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=chroma_dir, settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"})
    li_chroma.ChromaVectorStore(chroma_collection=collection).add(nodes)
    target = url_for("pgvector")
    report = vectorport.migrate.run(f"chroma://{chroma_dir}?collection={name}&layout=llamaindex", target)
    assert report.status == "verified", report.to_dict()
    store = LlamaIndexStore(target)
    try:
        back = {n.node_id: n for n in store.get_nodes([n.node_id for n in nodes])}
    finally:
        store.close()
    for node in nodes:
        got = back[node.node_id]
        assert list(got.metadata) == list(node.metadata)
        for mode in (schema.MetadataMode.LLM, schema.MetadataMode.EMBED, schema.MetadataMode.ALL):
            assert got.get_content(mode) == node.get_content(mode), (node.node_id, mode)
