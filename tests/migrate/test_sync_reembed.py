"""``sync --reembed MODEL``: what changed is re-embedded (and only that, counted where the model is
paid for: the local server speaking Voyage's protocol); the model is recorded in the state, and a
state synced with another model makes a full pass, named so."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.exceptions import ConfigurationError
from vectorport.ingest.embedders import resolve_embedder

from ..ingest.voyage_server import VoyageServer, fake_vector

pytestmark = pytest.mark.memory
DOC = "Represent the document for retrieval: "


@pytest.fixture
def voyage(monkeypatch: pytest.MonkeyPatch) -> Iterator[VoyageServer]:
    with VoyageServer("vk-sync") as srv:
        monkeypatch.setenv("VOYAGE_API_KEY", srv.api_key)
        monkeypatch.setenv("VOYAGE_BASE_URL", srv.base_url)
        yield srv


def _embedded(srv: VoyageServer) -> int:
    """Chunks sent to the model (not the probe of an unknown model's dimension)."""
    return sum(n for text, n in srv.embedded.items() if text != "dimension probe")


def _urls() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"memory://sync-re-src-{tag}", f"memory://sync-re-dst-{tag}"


def test_sync_reembeds_what_changed_and_a_new_model_is_a_full_pass(
    voyage: VoyageServer, tmp_path: Path
) -> None:
    source, target = _urls()
    state = tmp_path / "state.db"
    with vectorport.connect(source, dimension=4) as src:
        src.upsert([Record(f"k{i}", [1.0, i, 0, 0], {"i": i}, f"text {i}") for i in range(200)])
        first = vectorport.sync(source, target, state=state, reembed="voyage:voyage-test")
        assert first.sync.written == 200 and first.exit_code == 0, first.to_dict()
        assert _embedded(voyage) == 200
        src.upsert([Record(f"k{i}", [1.0, i, 0, 0], {"i": i}, f"text {i} edited") for i in range(5)])
        src.upsert([Record(f"new{i}", [0.0, i, 1, 0], {"i": i}, f"new text {i}") for i in range(3)])
        second = vectorport.sync(source, target, state=state, reembed="voyage:voyage-test")
        assert second.sync.mode == "incremental" and second.sync.written == 8, second.to_dict()
        # only what changed was sent to the model
        sent = {t for t, n in voyage.embedded.items() if n}
        assert _embedded(voyage) == 208
        assert {f"text {i} edited" for i in range(5)} | {f"new text {i}" for i in range(3)} <= sent
    with vectorport.connect(target) as dst:
        assert dst.spec.dimension == 32 and dst.spec.embedding_model == "voyage:voyage-test"
        [rec] = dst.get(["k3"])
        want = fake_vector("voyage-test", DOC + "text 3 edited", 32)
        np.testing.assert_allclose(rec.vector, want, atol=1e-6)
    # the same dimension, another model: refused by name before any write, never mixed
    with pytest.raises(ConfigurationError, match=_MIXED.format(old="voyage:voyage-test", new="hash:32")):
        vectorport.sync(source, target, state=state, reembed="hash:32")
    with vectorport.connect(target) as dst:
        assert dst.spec.embedding_model == "voyage:voyage-test"
        [rec] = dst.get(["k3"])
        np.testing.assert_allclose(rec.vector, want, atol=1e-6)
    assert _embedded(voyage) == 208


_MIXED = "holds vectors from '{old}'; these are from '{new}': sync into a new collection"


def test_a_target_recording_no_model_is_rewritten_whole_when_the_model_changes(tmp_path: Path) -> None:
    """A target that records no model (made outside vectorport) cannot say which model its
    vectors are from: the state can, and a state synced with another model is a full pass."""
    source, target = _urls()
    state = tmp_path / "state.db"
    vectorport.connect(target, dimension=8)
    with vectorport.connect(source, dimension=2, embedding_model="hash:2") as src:
        src.upsert([Record(f"k{i}", [1.0, i], {"i": i}, f"text {i}") for i in range(20)])
    assert vectorport.sync(source, target, state=state, reembed="hash:8").sync.written == 20
    third = vectorport.sync(source, target, state=state, reembed="hash:8:3")
    assert third.sync.mode == "full" and third.sync.written == 20, third.to_dict()
    assert any(
        "full pass: the state was synced with hash:8, this run writes hash:8:3" in n for n in third.notes
    )
    with vectorport.connect(target) as dst:
        [rec] = dst.get(["k5"])
    want = resolve_embedder("hash:8:3").embed_documents(["text 5"])[0]
    np.testing.assert_allclose(rec.vector, want, atol=1e-6)
    # a plain sync writes the source's vectors (hash:2): not into a target of another model
    other = f"memory://sync-re-other-{uuid.uuid4().hex[:8]}"
    vectorport.connect(other, dimension=2, embedding_model="hash:2:9")
    with pytest.raises(ConfigurationError, match=_MIXED.format(old="hash:2:9", new="hash:2")):
        vectorport.sync(source, other, state=tmp_path / "p.db")
    assert vectorport.connect(other).count() == 0


def test_sync_reembed_names_a_record_without_text(voyage: VoyageServer, tmp_path: Path) -> None:
    source, target = _urls()
    with vectorport.connect(source, dimension=2) as src:
        src.upsert([Record("has", [1.0, 0], {}, "some text"), Record("bare", [0.0, 1], {})])
    report = vectorport.sync(source, target, state=tmp_path / "s.db", reembed="voyage:voyage-test")
    assert report.sync.unwritable.total == 1
    [item] = report.sync.unwritable.items
    assert item["key"] == "bare" and "no text to re-embed" in str(item["problems"])
    assert _embedded(voyage) == 1 and voyage.embedded["some text"] == 1


def test_a_first_sync_over_a_reembedded_copy_rewrites_only_what_changed(tmp_path: Path) -> None:
    """The target's vectors are the model's: its full first pass judges by text and metadata."""
    source, target = _urls()
    with vectorport.connect(source, dimension=2) as src:
        src.upsert([Record(f"k{i}", [1.0, i], {"i": i}, f"text {i}") for i in range(50)])
        assert vectorport.migrate.run(source, target, reembed="hash:8").exit_code == 0
        src.upsert([Record("k7", [1.0, 7], {"i": 7}, "text 7 edited")])
    report = vectorport.sync(source, target, state=tmp_path / "s.db", reembed="hash:8")
    assert report.sync.mode == "full" and report.sync.written == 1 and report.sync.unchanged == 49
