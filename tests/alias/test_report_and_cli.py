"""``vectorport alias``: the commands' output and exit codes, and ``status --report`` rendered
in a real headless browser (as the compare report is); opening the alias with ``aconnect`` and
LlamaIndex."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import alias
from vectorport.cli import app

from ..compare._chromium import render
from ._data import DIM, filled

pytestmark = [pytest.mark.memory, pytest.mark.alias]

PLOTS = {"plot-overlap-time", "plot-p99-time", "plot-errors-time", "plot-latency-cdf"}


@pytest.fixture
def shadowing(tmp_path: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """An alias ``docs`` whose candidate shadowed 60 queries of three filter shapes (both
    members record ``hash:8``, which embeds a labelled query's text for each)."""
    slug = request.node.name
    old, new = f"memory://{slug}-old", f"memory://{slug}-new"
    vectorport.connect(old, dimension=DIM, embedding_model="hash:8")
    filled(old)
    reg = str(tmp_path / "aliases.sqlite")
    alias.create("docs", old, registry=reg)
    alias.shadow("docs", new, registry=reg, settle=0.0)
    store = vectorport.connect(f"alias://docs?registry={reg}")
    rng = np.random.default_rng(3)
    shapes = [None, {"lang": "en"}, {"$and": [{"lang": "fr"}, {"year": {"$lt": 2004}}]}]
    for i in range(60):
        store.query(rng.normal(size=DIM), k=5, filter=shapes[i % 3])
    store.close()
    yield reg, old, new
    for url in (old, new):
        with contextlib.suppress(vectorport.NotFoundError):
            vectorport.connect(url).drop()


def test_the_commands_print_the_alias_and_exit_by_the_table(shadowing: tuple[str, str, str]) -> None:
    reg, _, new = shadowing
    runner = CliRunner()
    res = runner.invoke(app, ["alias", "status", "docs", "--registry", reg])
    assert res.exit_code == 0, res.output
    assert "alias docs: shadow (version 3, sample 1): healthy" in res.stdout
    assert f"shadow {new}: 60 queries, 0 errors, overlap@k 1.000" in res.stdout
    assert "$and(lang $eq, year $lt)" in res.stdout
    res = runner.invoke(app, ["alias", "switch", "docs", "--registry", reg, "--min-queries", "100"])
    assert res.exit_code == 4, res.output
    assert "refused: queries: 60 shadowed queries answered (0 errors); the gate asks 100" in res.stdout
    res = runner.invoke(
        app, ["alias", "switch", "docs", "--registry", reg, "--min-queries", "50", "--max-p99-ratio", "0"]
    )
    assert res.exit_code == 0 and "switched (version 4" in res.stdout, res.output
    res = runner.invoke(app, ["alias", "retire", "docs", new, "--registry", reg])
    assert res.exit_code == 2 and "switch to another member before retiring it" in res.output
    res = runner.invoke(app, ["alias", "status", "nope", "--registry", reg])
    assert res.exit_code == 2 and "no alias 'nope'" in res.output


def test_status_report_renders_in_a_browser(shadowing: tuple[str, str, str], tmp_path: Path) -> None:
    """The page, with the quality the registry recorded when ``status --queries`` measured it
    (per member and per model) though this call was given no queries."""
    reg, old, new = shadowing
    page, queries = tmp_path / "alias.html", tmp_path / "q.jsonl"
    queries.write_text(
        "".join(json.dumps({"text": f"text {i}", "relevant": [f"doc#{i}"]}) + "\n" for i in range(20))
    )
    runner = CliRunner()
    measured = runner.invoke(
        app, ["alias", "status", "docs", "--registry", reg, "--queries", str(queries), "--json"]
    )
    assert measured.exit_code == 0, measured.output
    quality = json.loads(measured.stdout)["quality"]
    res = runner.invoke(app, ["alias", "status", "docs", "--registry", reg, "--report", str(page), "--json"])
    assert res.exit_code == 0, res.output
    recorded = {q["member"]: q for q in json.loads(res.stdout)["quality_recorded"]}
    assert {m: (q["model"], q["queries"], q["ndcg"]) for m, q in recorded.items()} == {
        m: ("hash:8", 20, q["ndcg"]) for m, q in quality.items()
    }
    plots = PLOTS | {"plot-quality"}
    source = page.read_text()
    assert re.findall(r"https?://[^\"' <]+", source) == ["http://www.w3.org/2000/svg"] * len(plots)
    dom = render(page)
    assert set(re.findall(r'<svg class="plot" id="([^"]+)"', dom)) == plots
    rendered = re.search(r'data-plots-rendered="(\d+)"', dom)
    assert rendered is not None and int(rendered.group(1)) == len(plots)
    assert "$and(fr" not in dom and "$and(lang $eq, year $lt)" in dom
    assert len(re.findall(r'<rect class="bar"', dom)) >= 2 + 6  # the quality chart: 3 bars per member
    section = dom[dom.index("Quality on labelled queries") :]
    for member in (old, new):
        ndcg = f"{quality[member]['ndcg']:.3f}"
        assert re.search(rf"{re.escape(member)}</td>.*?hash:8</td><td[^>]*>20</td><td[^>]*>{ndcg}<", section)
    assert re.search(r"<td class=\"l\">hash:8</td><td[^>]*>2</td><td[^>]*>40</td>", section)  # per model


async def test_aconnect_and_llamaindex_open_the_alias(shadowing: tuple[str, str, str]) -> None:
    reg, old, _ = shadowing
    url = f"alias://docs?registry={reg}"
    store = await vectorport.aconnect(url)
    try:
        assert await store.acount() == 60
    finally:
        await store.aclose()
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from vectorport.llamaindex import LlamaIndexStore

    li = LlamaIndexStore(url)
    found = li.query(VectorStoreQuery(query_embedding=list(np.ones(DIM)), similarity_top_k=3))
    assert len(found.ids or []) == 3
    assert [m.key for m in vectorport.connect(old).query(np.ones(DIM), k=3)] == found.ids
