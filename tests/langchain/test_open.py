"""What the adapters open: a URL (its collection made by the first write, with the embedding's
dimension and the asked metric), a store the application holds (left open for it), a SQLAlchemy
engine (as ``vectorport.connect`` takes it), and clear errors for the rest."""

from __future__ import annotations

import math
from typing import Any

import pytest

import vectorport

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from llama_index.core.schema import TextNode

from vectorport.langchain import LangChainEmbeddings, LangChainStore
from vectorport.llamaindex import LlamaIndexStore

pytestmark = [pytest.mark.langchain, pytest.mark.llamaindex]


@pytest.mark.memory
def test_a_url_collection_is_made_by_the_first_write_with_the_metric_asked() -> None:
    lc = LangChainStore(
        "memory://frameworks-open", embedding=LangChainEmbeddings("hash:16"), metric="euclidean"
    )
    assert lc.similarity_search("anything", k=3) == [] and lc.get_by_ids(["a"]) == []
    assert lc.delete(["a"]) is True  # nothing to delete yet: no error, nothing made
    with pytest.raises(vectorport.NotFoundError, match="until the first write"):
        _ = lc.store
    lc.add_texts(["red apple", "green pear"], ids=["a", "p"])
    assert (lc.store.spec.dimension, lc.store.spec.metric.value) == (16, "euclidean")
    (doc, distance), _ = lc.similarity_search_with_score("red apple", k=2)
    assert doc.id == "a" and distance == pytest.approx(0.0, abs=1e-6)
    (_, relevance), _ = lc.similarity_search_with_relevance_scores("red apple", k=2)
    assert relevance == pytest.approx(1.0 - distance / math.sqrt(2))
    lc.store.drop()


@pytest.mark.memory
def test_a_store_the_application_holds_stays_open_and_is_shared() -> None:
    store = vectorport.connect("memory://frameworks-shared", dimension=2)
    lc = LangChainStore(store, embedding=LangChainEmbeddings("hash:2"))
    li = LlamaIndexStore(store)
    li.add([TextNode(id_="n1", text="one", embedding=[1.0, 0.0], metadata={"lang": "en"})])
    assert [d.page_content for d in lc.get_by_ids(["n1"])] == ["one"]
    lc.close()
    li.close()
    assert store.count() == 1  # closing the adapters left the application's store alone
    with pytest.raises(vectorport.ConfigurationError, match="apply to a URL"):
        LangChainStore(store, embedding=LangChainEmbeddings("hash:2"), table="other")
    store.drop()


@pytest.mark.parametrize("bad", [None, 42])
def test_something_else_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(vectorport.ConfigurationError, match="expected a vectorport store or a store URL"):
        LangChainStore(bad, embedding=LangChainEmbeddings("hash:2"))
    with pytest.raises(vectorport.ConfigurationError, match="expected a vectorport store or a store URL"):
        LlamaIndexStore(bad)


@pytest.mark.pgvector
def test_a_sqlalchemy_engine_opens_like_connect(interop_uri: str) -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(interop_uri.replace("postgresql://", "postgresql+psycopg://", 1))
    lc = LangChainStore(engine, embedding=LangChainEmbeddings("hash:8"), table="frameworks_engine")
    try:
        assert lc.similarity_search("engine", k=1) == []  # no table yet: the first write makes it
        lc.add_texts(["through an engine"], [{"via": "sqlalchemy"}], ids=["e1"])
        assert lc.store.collection == "frameworks_engine"
        hits = lc.similarity_search("engine", k=1)
        assert [(d.id, d.metadata) for d in hits] == [("e1", {"via": "sqlalchemy"})]
    finally:
        lc.store.drop()
        lc.close()
        engine.dispose()
