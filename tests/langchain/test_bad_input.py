"""What a LangChain application may pass by mistake is a clear vectorport error before anything
is written: one string for ``texts`` (once stored as one document per character), a ``None``
text, an embedding function that returns ``None`` (once a raw ``TypeError``/``AttributeError``)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

import vectorport

pytestmark = pytest.mark.memory
pytest.importorskip("langchain_core")

from langchain_core.embeddings import Embeddings  # noqa: E402

from vectorport.langchain import LangChainStore  # noqa: E402

_names = itertools.count()


class Two(Embeddings):
    """Two dimensions from the text's length; ``broken`` returns ``None`` (or a ``None`` row)."""

    def __init__(self, broken: str = "") -> None:
        self.broken = broken

    def embed_documents(self, texts: list[str]) -> Any:
        if self.broken == "all":
            return None
        rows: list[Any] = [[1.0, float(len(t))] for t in texts]
        if self.broken == "row":
            rows[-1] = None
        return rows

    def embed_query(self, text: str) -> Any:
        return None if self.broken else [1.0, float(len(text))]


def _store(embedding: Embeddings) -> tuple[LangChainStore, str]:
    url = f"memory://langchain-bad-input-{next(_names)}"
    return LangChainStore(url, embedding=embedding, metric="cosine"), url


def _written(url: str) -> int:
    try:
        return vectorport.connect(url).count()
    except vectorport.NotFoundError:
        return 0


def test_one_string_for_texts_is_refused() -> None:
    store, url = _store(Two())
    with pytest.raises(vectorport.ConfigurationError, match="a list of texts"):
        store.add_texts("abc", ids=["one"])
    with pytest.raises(vectorport.ConfigurationError, match="a list of texts"):
        asyncio.run(store.aadd_texts("abc", ids=["one"]))
    assert _written(url) == 0


def test_a_none_text_is_refused_with_its_id() -> None:
    store, url = _store(Two())
    with pytest.raises(vectorport.ValidationError, match="'b'") as err:
        store.add_texts(["fine", None], ids=["a", "b"])  # type: ignore[list-item]
    assert "text" in str(err.value)
    assert _written(url) == 0


@pytest.mark.parametrize("broken", ["all", "row"])
def test_an_embedding_function_returning_none_is_a_clear_error(broken: str) -> None:
    store, url = _store(Two(broken))
    with pytest.raises(vectorport.ConfigurationError, match=r"Two\.embed_documents"):
        store.add_texts(["fine", "also fine"], ids=["a", "b"])
    with pytest.raises(vectorport.ConfigurationError, match=r"Two\.a?embed_documents"):
        asyncio.run(store.aadd_texts(["fine"], ids=["a"]))
    assert _written(url) == 0
    good, _ = _store(Two())
    good.add_texts(["fine"], ids=["a"])
    good._embedding = Two(broken)  # the same store, its embedding now broken for queries
    with pytest.raises(vectorport.ConfigurationError, match=r"Two\.embed_query"):
        good.similarity_search("fine", k=1)
