"""A target changed behind the sync's back: an incremental ``sync`` trusts its state and sees
nothing, ``sync --verify`` finds the difference and says to run ``--full``, and ``--full``
repairs it. The target is changed and read back with chromadb itself."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

pytestmark = pytest.mark.chroma


def test_sync_verify_suggests_full_and_full_repairs(url_for: Callable[..., str], tmp_path: Path) -> None:
    from ..chroma._plain import plain_client

    source = "memory://sync-full-hint"
    store = vectorport.connect(source, dimension=3)
    store.upsert([vectorport.Record(f"k{i}", np.ones(3) * (i + 1), {"i": i}, f"text {i}") for i in range(30)])
    target = url_for("chroma")
    state = str(tmp_path / "state.db")
    runner = CliRunner()
    try:
        assert runner.invoke(app, ["sync", source, target, "--state", state]).exit_code == 0
        name = target.split("collection=")[1].split("&")[0]
        with plain_client(target) as client, warnings.catch_warnings():
            # chromadb warns about the collection's embedding-function config on any update
            # without one of its own: its deprecation, not this test's concern
            warnings.simplefilter("ignore", DeprecationWarning)
            client.get_collection(name).update(
                ids=["k7"], embeddings=[[8.0, 8.0, 8.0]], documents=["edited behind the sync"]
            )

        plain = runner.invoke(app, ["sync", source, target, "--state", state, "--json"])
        assert plain.exit_code == 0, plain.output
        assert json.loads(plain.stdout)["sync"]["mode"] == "incremental"

        checked = runner.invoke(app, ["sync", source, target, "--state", state, "--verify", "--json"])
        assert checked.exit_code == 1, checked.output
        report = json.loads(checked.stdout)
        assert report["status"] == "differences"
        assert any("--full" in note for note in report["notes"]), report["notes"]
        human = runner.invoke(app, ["sync", source, target, "--state", state, "--verify"])
        assert human.exit_code == 1 and "--full" in human.output, human.output

        full = runner.invoke(app, ["sync", source, target, "--state", state, "--full", "--verify", "--json"])
        assert full.exit_code == 0, full.output
        assert not any("--full" in note for note in json.loads(full.stdout)["notes"])
        with plain_client(target) as client:
            assert client.get_collection(name).get(ids=["k7"])["documents"] == ["text 7"]
    finally:
        store.drop()
