from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

from .ingest_helpers import long_markdown

pytestmark = pytest.mark.memory

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


def test_ingest_search_doctor_cycle(
    tree: Callable[[dict[str, str]], Path], memory_url: str, tmp_path: Path
) -> None:
    root = tree(
        {
            "guide.md": long_markdown("Guide", 2),
            "fruit.md": "# Fruit\n\nRed apples and green pears grow in the orchard.",
            "rocks.txt": "Granite and basalt are igneous rocks.",
        }
    )
    code, out = run("ingest", str(root), memory_url, "-e", "hash:64", "--target-tokens", "60", "--json")
    assert code == 0, out
    first = json.loads(out)
    assert first["added"] == 3 and first["embedding_model"] == "hash:64"
    code, out = run("ingest", str(root), memory_url, "-e", "hash:64", "--target-tokens", "60", "--json")
    again = json.loads(out)
    assert code == 0 and again["skipped"] == 3 and again["embedding_calls"] == 0
    code, out = run("ingest", str(root), memory_url, "-e", "hash:64", "--target-tokens", "60")
    assert code == 0 and "skipped (unchanged)" in out

    # search uses the recorded model by default
    code, out = run("search", memory_url, "red apples orchard", "-k", "2", "--json")
    assert code == 0, out
    res = json.loads(out)
    assert res["embedding_model"] == "hash:64" and res["matches"][0]["source"] == "fruit.md"
    code, out = run(
        "search", memory_url, "apples", "--collapse", "--filter", '{"format": "markdown"}', "--json"
    )
    sources = [m["source"] for m in json.loads(out)["matches"]]
    assert code == 0 and len(sources) == len(set(sources)) and "rocks.txt" not in sources
    code, out = run("search", memory_url, "apples", "--min-score", "0.99", "--json")
    assert code == 0 and json.loads(out)["k_returned"] == 0
    code, out = run("search", memory_url, "apples")
    assert code == 0 and "fruit.md#chunk0" in out
    code, _ = run("search", memory_url, "apples", "-e", "hash:64:5")
    assert code == 2  # a different model than the collection's: a clear usage error
    code, _ = run("search", memory_url, "apples", "--filter", "{bad json")
    assert code == 2

    # doctor: healthy, then canaries recorded, then drift after a re-embed with another model
    canaries = tmp_path / "canaries.json"
    code, out = run(
        "doctor", memory_url, "--source-root", str(root), "--record-canaries", str(canaries), "--json"
    )
    assert code == 0, out
    report = json.loads(out)
    assert report["ok"] and report["canaries_recorded"] == str(canaries) and canaries.exists()
    code, out = run("doctor", memory_url, "--canaries", str(canaries))
    assert code == 0 and "steady" in out
    code, out = run("doctor", memory_url, "--json")  # the library names keywords, the CLI its flags
    assert json.loads(out)["checks_skipped"] == {
        "orphan": "no source root given (--source-root)",
        "canary-drift": "no canary file (--canaries)",
    }

    (root / "rocks.txt").unlink()
    code, out = run("doctor", memory_url, "--source-root", str(root), "--json")
    assert code == 1 and [f["check"] for f in json.loads(out)["findings"]] == ["orphan"]
    code, out = run("doctor", memory_url, "--source-root", str(root))
    assert code == 1 and "orphan" in out

    store = vectorport.connect(memory_url)
    rec = store.get(["fruit.md#chunk0"])[0]
    rec.metadata["embedding_model"] = "hash:64:2"
    store.upsert([rec])
    code, out = run("doctor", memory_url, "--no-embedder", "--json")
    found = json.loads(out)["findings"]
    assert code == 1 and found[0]["check"] == "stale-model" and found[0]["keys"] == ["fruit.md#chunk0"]


def test_ingest_usage_errors(tmp_path: Path, memory_url: str) -> None:
    code, _ = run("ingest", str(tmp_path / "missing"), memory_url, "-e", "hash:8")
    assert code == 2
    code, _ = run("ingest", str(tmp_path), memory_url, "-e", "hash:nope")
    assert code == 2
    code, _ = run("ingest", str(tmp_path), memory_url, "-e", "hash:8", "--target-tokens", "2")
    assert code == 2
