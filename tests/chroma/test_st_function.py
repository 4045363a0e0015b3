"""A collection made by plain ``chromadb`` with ``SentenceTransformerEmbeddingFunction`` given a
model folder (what an offline team does): vectorport runs that model for text queries itself,
and the same model named by ``--embedder`` is found to be the collection's model. Before, the
collection recorded ``chroma:<folder>``, which no embedder was equal to: ``search`` asked for
``--embedder`` and then refused the one given."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.ingest.embedders import packaged_model_path, same_model

from ._plain import collection_name, plain_client

pytestmark = pytest.mark.chroma

DOCS = {
    "a": "the cat sat on the mat",
    "b": "stock markets fell sharply on Monday",
    "c": "a kitten chased a ball of yarn",
    "d": "the central bank raised interest rates",
}


@pytest.fixture
def st_collection(embedded_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # chromadb's own function loads it by path
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    url = embedded_url()
    ef = SentenceTransformerEmbeddingFunction(model_name=str(packaged_model_path()))
    with plain_client(url) as client:
        coll = client.create_collection(collection_name(url), embedding_function=ef)  # type: ignore[arg-type]
        coll.add(ids=list(DOCS), documents=list(DOCS.values()))
    return url


def _chroma_answer(url: str, text: str) -> list[tuple[str, float]]:
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    ef = SentenceTransformerEmbeddingFunction(model_name=str(packaged_model_path()))
    with plain_client(url) as client:
        coll = client.get_collection(collection_name(url), embedding_function=ef)  # type: ignore[arg-type]
        got = coll.query(query_texts=[text], n_results=4)
    return list(zip(got["ids"][0], got["distances"][0], strict=True))  # type: ignore[index]


def test_text_queries_use_the_collections_own_model(st_collection: str) -> None:
    with vectorport.connect(st_collection) as store:
        recorded = store.spec.embedding_model
    assert recorded == f"sentence-transformers:{packaged_model_path()}"
    assert same_model(recorded, "sentence-transformers:all-MiniLM-L6-v2")

    expected = _chroma_answer(st_collection, "a small cat")
    for extra in ([], ["--embedder", str(packaged_model_path())], ["-e", "st:all-MiniLM-L6-v2"]):
        args = ["search", st_collection, "a small cat", "-k", "4", "--json", *extra]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.stdout + result.stderr
        matches = json.loads(result.stdout)["matches"]
        assert [m["key"] for m in matches] == [k for k, _ in expected]
        # chromadb's cosine distance is 1 - similarity
        assert [m["score"] for m in matches] == pytest.approx([1 - d for _, d in expected], abs=1e-4)


def test_a_folder_is_its_model_by_any_path(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "my-model"
    folder.mkdir(parents=True)
    assert same_model(f"sentence-transformers:{folder}", "sentence-transformers:my-model")
    assert same_model(f"sentence-transformers:{folder}", f"st:{folder}")
    assert not same_model(f"sentence-transformers:{folder}", "sentence-transformers:other-model")
    copy = tmp_path / "elsewhere"
    shutil.copytree(folder, copy)
    assert not same_model(f"sentence-transformers:{copy}", "sentence-transformers:my-model")
