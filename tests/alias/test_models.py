"""An alias whose candidate embeds with another model (on memory stores, in one process): the
backfill re-embeds, dual-writes re-embed the written text off the app's call, text queries are
embedded by each member's own model, vector-only queries never reach a member of another model,
and the switch judges the candidate by text and metadata, not by overlap."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from typer.testing import CliRunner

import vectorport
from vectorport import Record, alias
from vectorport.alias._embedding import Embedders
from vectorport.alias._registry import Registry
from vectorport.alias._routing import Router, Routing
from vectorport.alias._writes import Op, repair, write
from vectorport.cli import app
from vectorport.exceptions import ConfigurationError, NotFoundError, ValidationError
from vectorport.ingest.embedders import resolve_embedder
from vectorport.langchain import LangChainStore
from vectorport.llamaindex import LlamaIndexStore
from vectorport.search import search

from ._data import registry

pytestmark = [pytest.mark.memory, pytest.mark.alias, pytest.mark.langchain]

OLD, NEW = "hash:16", "hash:8:1"
TEXTS = [f"note {i} on {w}" for i in range(30) for w in ("ports", "tables")]


def embedded(model: str, texts: list[str]) -> np.ndarray:
    return np.asarray(resolve_embedder(model).embed_documents(texts), dtype=np.float32)


@pytest.fixture
def urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    slug = request.node.name
    old, new = f"memory://{slug}-old", f"memory://{slug}-new"
    store = vectorport.connect(old, dimension=16, embedding_model=OLD)
    vectors = embedded(OLD, TEXTS)
    store.upsert([Record(f"doc#{i}", vectors[i], {"i": i}, t) for i, t in enumerate(TEXTS)])
    yield old, new, registry(tmp_path)
    for url in (old, new):
        with contextlib.suppress(NotFoundError):
            vectorport.connect(url).drop()


def held_by_model(url: str, model: str) -> dict[str, str]:
    """Every record of ``url``: key → text, checked to be embedded by ``model``."""
    records = [r for page in vectorport.connect(url).scan(include=["vector", "text"]) for r in page.records]
    want = embedded(model, [r.text or "" for r in records])
    got = np.asarray([r.vector for r in records], dtype=np.float32)
    np.testing.assert_allclose(got, want, atol=1e-5)
    return {r.key: r.text or "" for r in records}


def wait_for(check: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_candidate_of_another_model_is_backfilled_fed_and_shadowed_in_its_model(
    urls: tuple[str, str, str],
) -> None:
    old, new, reg = urls
    alias.create("docs", old, registry=reg)
    report = alias.shadow("docs", new, registry=reg, model=NEW, settle=0.0)
    assert report.state.member(new).embedding_model == NEW
    assert vectorport.connect(new).spec.dimension == 8
    assert held_by_model(new, NEW) == held_by_model(old, OLD)  # backfilled by migrate --reembed

    app = LangChainStore(f"alias://docs?registry={reg}", DeterministicFakeEmbedding(size=16))
    app.add_texts(["a fresh note on ports"], metadatas=[{"i": 99}], ids=["doc#new"])
    docs = app.similarity_search(TEXTS[3], k=3)
    assert docs[0].page_content == TEXTS[3]  # embedded by the serving model (hash:16), not the app's
    store = app.store
    with pytest.raises(ValidationError, match=r"record 'bare'.*no text.*hash:8:1"):
        store.upsert([Record("bare", np.ones(16), {"i": 0})])
    assert vectorport.connect(old).get(["bare"]) == []  # refused before any write
    store.query(np.ones(16, dtype=np.float32), k=3)  # a vector only: never sent to hash:8:1
    app.close()  # the shadow thread drains: rows, counters, repairs written

    wait_for(lambda: "doc#new" in held_by_model(new, NEW))
    assert held_by_model(new, NEW) == held_by_model(old, OLD)
    state = alias.status("docs", registry=reg)
    label = state.state.member(new).label
    # asked with a vector of its own model: a 16-dimension one would have failed on 8 dimensions
    assert (state.figures[label].queries, state.figures[label].errors) == (1, 0)
    assert state.counters[label]["other_model"] == 1


def test_switch_to_another_model_gates_on_data_not_overlap_and_serves_its_model(
    urls: tuple[str, str, str],
) -> None:
    old, new, reg = urls
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, model=NEW, settle=0.0)
    app = LangChainStore(f"alias://docs?registry={reg}", DeterministicFakeEmbedding(size=16))
    for text in TEXTS[:12]:
        app.similarity_search(text, k=5)
    gates = alias.Gates(min_queries=10, min_overlap=0.99, max_p99_ratio=None, verify=True)
    wait_for(lambda: alias.status("docs", registry=reg).figures[new].queries >= 10)
    report = alias.switch("docs", registry=reg, gates=gates)
    assert report.status.value == "applied", report.reasons
    by_name = {g.name: g for g in report.gates}
    assert by_name["overlap"].ok and "information" in by_name["overlap"].detail
    assert "text and metadata" in by_name["verify"].detail

    app.add_texts(["after the switch"], metadatas=[{"i": 100}], ids=["doc#late"])
    docs = app.similarity_search("after the switch", k=1)
    assert docs[0].page_content == "after the switch" and app.store.served_by == new
    found = search(app.store, None, "after the switch", k=1)  # `vectorport search alias://…`
    assert (found.keys, found.model_id) == (["doc#late"], NEW)
    with pytest.raises(ConfigurationError, match="now serves vectors of hash:8:1"):
        app.store.query(np.ones(16, dtype=np.float32), k=3)
    wait_for(lambda: "doc#late" in held_by_model(old, OLD))  # the previous store, in its model
    assert held_by_model(new, NEW) == held_by_model(old, OLD)

    alias.rollback("docs", registry=reg)  # the old model serves again, with every write
    app.add_texts(["after the rollback"], metadatas=[{"i": 101}], ids=["doc#back"])
    assert app.similarity_search("after the rollback", k=1)[0].page_content == "after the rollback"
    assert app.store.served_by == old
    app.close()
    wait_for(lambda: "doc#back" in held_by_model(new, NEW))
    assert held_by_model(new, NEW) == held_by_model(old, OLD)


def test_switch_gates_on_quality_on_labelled_queries_and_status_shows_it(
    urls: tuple[str, str, str], tmp_path: Path
) -> None:
    old, new, reg = urls
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, model=NEW, settle=0.0)
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "relevant": [f"doc#{i}"]}) + "\n" for i, t in enumerate(TEXTS))
    )
    report = alias.status("docs", registry=reg, queries=str(path))
    serving, candidate = report.quality[old], report.quality[new]
    assert serving.queries == candidate.queries == len(TEXTS)
    assert serving.hit == 1.0  # each text finds itself in its own model (hash:16)
    assert f"quality {new}: nDCG@10 {candidate.ndcg:.3f}" in report.render()
    ratio = candidate.ndcg / serving.ndcg

    def gates(bar: float) -> alias.Gates:
        return alias.Gates(None, None, None, False, min_ndcg_ratio=bar, queries=str(path))

    refused = alias.switch("docs", registry=reg, gates=gates(ratio + 0.01))
    assert refused.status.value == "refused" and refused.reasons[0].startswith("ndcg_ratio: nDCG@10")
    measured = max(r.at for r in alias.status("docs", registry=reg).quality_recorded)
    assert alias.switch("docs", registry=reg, gates=gates(ratio - 0.01)).status.value == "applied"
    # the switch's gate recorded what it measured: the report page shows it (per member, model)
    recorded = {r.member: r for r in alias.status("docs", registry=reg).quality_recorded}
    assert {m: (r.model, r.ndcg) for m, r in recorded.items()} == {
        old: (OLD, serving.ndcg),
        new: (NEW, candidate.ndcg),
    }
    assert min(r.at for r in recorded.values()) > measured


@pytest.mark.llamaindex
def test_llamaindex_through_an_alias_hands_it_texts(urls: tuple[str, str, str]) -> None:
    old, new, reg = urls
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, model=NEW, settle=0.0)
    li = LlamaIndexStore(f"alias://docs?registry={reg}")
    # the node's own embedding (any model) is not what the members store: each embeds the text
    li.add([TextNode(id_="node#1", text="a node about buckets", embedding=[0.5] * 16, metadata={"i": 7})])
    question = VectorStoreQuery(
        query_embedding=[0.5] * 16, query_str="a node about buckets", similarity_top_k=1
    )
    assert li.query(question).ids == ["node#1"]
    li.close()
    wait_for(lambda: "node#1" in held_by_model(new, NEW))
    assert held_by_model(old, OLD)["node#1"] == "a node about buckets"


def test_the_commands_take_the_model_and_the_labelled_queries(
    urls: tuple[str, str, str], tmp_path: Path
) -> None:
    old, new, reg = urls
    runner = CliRunner()
    assert runner.invoke(app, ["alias", "create", "docs", "--serve", old, "--registry", reg]).exit_code == 0
    res = runner.invoke(app, ["alias", "shadow", "docs", new, "--model", NEW, "--registry", reg])
    assert res.exit_code == 0 and f"candidate {new} (dual-write, model {NEW})" in res.output
    path = tmp_path / "q.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "relevant": [f"doc#{i}"]}) + "\n" for i, t in enumerate(TEXTS))
    )
    res = runner.invoke(app, ["alias", "status", "docs", "--registry", reg, "--queries", str(path), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["quality"][old]["hit"] == 1.0
    switch = ["alias", "switch", "docs", "--registry", reg, "--min-queries", "0", "--queries", str(path)]
    res = runner.invoke(app, [*switch, "--min-ndcg-ratio", "1000"])
    assert res.exit_code == 4 and "refused: ndcg_ratio: nDCG@10" in res.output
    res = runner.invoke(app, ["alias", "switch", "docs", "--registry", reg, "--min-ndcg-ratio", "0.5"])
    assert res.exit_code == 2 and "--min-ndcg-ratio needs --queries" in res.output


def test_a_key_written_around_the_switch_keeps_its_newer_text_in_the_new_serving_store(
    urls: tuple[str, str, str],
) -> None:
    """The race, step by step: a process still routing by the version before the switch writes
    a key (the candidate misses it: queued to be embedded by its model), the switched alias
    writes it again (the new serving store takes it; the previous one misses it), then the stale
    process drains the queue. The older text must not land over the newer one."""
    old, new, reg = urls
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, model=NEW, settle=0.0)
    registry_ = Registry(reg)
    before = Router(registry_, "docs").current()  # a process that has not seen the switch yet
    off = alias.Gates(min_queries=None, min_overlap=None, max_p99_ratio=None, verify=False)
    assert alias.switch("docs", registry=reg, gates=off).status.value == "applied"
    after = Router(registry_, "docs").current()

    def put(routing: Routing, model: str, text: str) -> None:
        write(registry_, routing, Op("upsert", [Record("doc#race", embedded(model, [text])[0], {}, text)]))

    put(before, OLD, "first text")  # the candidate misses it: queued (embedded later by hash:8:1)
    put(after, NEW, "second text")  # served now by the candidate; the previous store misses it
    assert registry_.repair_count("docs") == 2
    repair(registry_, before, Embedders())  # the stale process drains the queue
    assert held_by_model(new, NEW)["doc#race"] == "second text"
    assert held_by_model(old, OLD)["doc#race"] == "second text"
    assert registry_.repair_count("docs") == 0
