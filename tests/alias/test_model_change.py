"""The done-when of a model change on a running app: app processes (LangChain, through the
alias) serve from pgvector embedded by all-MiniLM-L6-v2 (384) while the operator shadows a
pgvector candidate of the hashing embedder ``hash:64`` (a dimension change; no second packaged
model is installed), then switches on quality-neutral evidence (the data by text and metadata).

No call fails; every acknowledged write is in the candidate with the vector the candidate's
model computes from its text (recomputed here); after the switch, text queries are served by the
candidate, i.e. embedded by ``hash:64``."""

from __future__ import annotations

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
NEW = "hash:64"


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


def test_running_app_changes_model_from_minilm_to_hash64(
    url_for: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reg = str(tmp_path / "aliases.sqlite")
    apps = Apps(f"alias://app?registry={reg}", tmp_path, n=2, warm_up=240, preload=DEFAULT_EMBEDDER)
    old, new = url_for("pgvector"), url_for("pgvector")
    _seed(old)
    alias.create("app", old, registry=reg)
    with apps.running() as logs:
        report = alias.shadow("app", new, registry=reg, model=NEW)
        assert report.backfill is not None and report.backfill.copied >= SEEDED
        wait_for(shadowed("app", reg, new, 10), 120)
        gates = alias.Gates(min_queries=10, min_overlap=0.9, max_p99_ratio=None)
        switched = _switch(reg, gates)
        wait_for(lambda: sum(c["start"] > switched for c in entries(logs)) >= 40, 30)
    calls = entries(logs)
    check_calls(calls, min_writes=10)
    check_store(new, calls, SEEDED)  # every acknowledged write, by the raw client (psycopg)
    assert _embedded_by(new, NEW) > SEEDED  # … each with the vector hash:64 gives its text
    after = [c for c in calls if c["op"] == "query" and c["start"] > switched]
    assert after and all(c["served_by"] == new for c in after)  # answered in hash:64


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
