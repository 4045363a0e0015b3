"""``vectorport search --mode vector|text|hybrid [--weight W]`` on a real ingested corpus."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.ingest import HashEmbedder
from vectorport.search import search

pytestmark = pytest.mark.memory

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout + (result.stderr if result.stderr_bytes else "")


def test_search_modes(tree: Callable[[dict[str, str]], Path], memory_url: str, tmp_path: Path) -> None:
    root = tree(
        {
            "fruit.md": "# Fruit\n\nRed apples and green pears grow in the orchard.",
            "rocks.txt": "Granite and basalt are igneous rocks.",
            "sea.txt": "The sea holds salt, fish and basalt pebbles.",
        }
    )
    code, out = run("ingest", str(root), memory_url, "-e", "hash:64", "--json")
    assert code == 0, out

    code, out = run("search", memory_url, "basalt granite", "--mode", "text", "--json")
    assert code == 0, out
    res = json.loads(out)
    assert res["mode"] == "text" and res["embedding_model"] == ""
    assert [m["source"] for m in res["matches"]] == ["rocks.txt", "sea.txt"]  # both terms beat one
    assert res["matches"][0]["text_rank"] == 1

    store = vectorport.connect(memory_url)
    want = search(store, HashEmbedder(64), "basalt", k=3, mode="hybrid", weight=0.3)
    code, out = run(
        "search", memory_url, "basalt", "-k", "3", "--mode", "hybrid", "--weight", "0.3", "--json"
    )
    assert code == 0, out
    res = json.loads(out)
    assert res["weight"] == 0.3 and [m["key"] for m in res["matches"]] == want.keys
    assert all(m["rrf_score"] > 0 for m in res["matches"])
    code, out = run("search", memory_url, "basalt", "--mode", "hybrid")
    assert code == 0 and "hybrid, weight 0.5" in out

    code, out = run("search", memory_url, "basalt", "--mode", "fuzzy")
    assert code == 2 and "search mode must be one of vector, text, hybrid" in out
    code, out = run("search", memory_url, "basalt", "--mode", "hybrid", "--weight", "2")
    assert code == 2 and "fusion weight" in out

    # a store without text search refuses the mode before it is searched
    chroma = f"chroma://{tmp_path / 'chroma'}?collection=docs"
    code, out = run("ingest", str(root), chroma, "-e", "hash:64", "--json")
    assert code == 0, out
    code, out = run("search", chroma, "basalt", "--mode", "text")
    assert code == 2 and "has no text search" in out
