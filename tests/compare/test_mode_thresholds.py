"""Score thresholds of ``compare --mode``: the relevant vs non-relevant score distributions and
the ``min_score`` keeping a share of the relevant results, checked against a direct computation
on a labelled corpus of real text, in the terminal, the JSON and the HTML report (rendered in
headless Chromium)."""

from __future__ import annotations

import json
import re
import statistics
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.compare import Query, compare_modes

from ._chromium import render
from .labelled_corpus import EMBEDDER, QUERIES, direct_scores, direct_threshold, load, write_queries

pytestmark = pytest.mark.memory

runner = CliRunner()


@pytest.fixture
def memory() -> Iterator[vectorport.VectorStore]:
    store = vectorport.connect("memory://mode-thresholds", dimension=64, embedding_model=EMBEDDER.model_id)
    load(store)
    yield store
    store.drop()


@pytest.mark.parametrize("keep", [0.9, 0.75, 0.5, 1.0])
def test_thresholds_and_distributions_match_a_direct_computation(
    memory: vectorport.VectorStore, keep: float
) -> None:
    queries = [Query(text=t, relevant=r) for t, r in QUERIES]
    out = compare_modes({"mem": memory}, queries, 5, weights=[0.3, 0.7], embedder=EMBEDDER, keep=keep)
    kinds = {"vector": "cosine similarity", "text": "BM25", "hybrid": "cosine similarity"}
    for row in out.rows:
        relevant, other = direct_scores(memory, row.mode, 5, row.weight or 0.5)
        assert sorted(row.relevant_scores) == pytest.approx(sorted(relevant), abs=1e-6)
        assert sorted(row.other_scores) == pytest.approx(sorted(other), abs=1e-6)
        t = row.scores
        assert t is not None and t.kind == kinds[row.mode] and t.keep == keep
        assert row.model == EMBEDDER.model_id
        threshold, kept, dropped = direct_threshold(list(row.relevant_scores), list(row.other_scores), keep)
        assert t.threshold == row.threshold == threshold
        assert (t.relevant_kept, t.other_dropped) == pytest.approx((kept, dropped))
        assert t.relevant_kept >= keep
        for summary, values in ((t.relevant, relevant), (t.other, other)):
            deciles = statistics.quantiles(values, n=10, method="inclusive")
            assert summary.n == len(values)
            assert (summary.min, summary.max, summary.mean) == pytest.approx(
                (min(values), max(values), statistics.fmean(values)), abs=1e-6
            )
            assert (summary.p10, summary.median, summary.p90) == pytest.approx(
                (deciles[0], statistics.median(values), deciles[-1]), abs=1e-6
            )
    # the labels separate the text scores well: a BM25 threshold drops most wrong results
    text = next(r for r in out.rows if r.mode == "text")
    assert text.scores is not None and text.scores.relevant.median > text.scores.other.p90


def test_cli_terminal_json_and_html_report(memory: vectorport.VectorStore, tmp_path: Path) -> None:
    qfile = write_queries(tmp_path / "q.jsonl")
    page = tmp_path / "modes.html"
    result = runner.invoke(
        app,
        [
            "compare", "mem=memory://mode-thresholds", "--queries", str(qfile),
            "--mode", "vector,text,hybrid", "--weight", "0.3,0.7", "-k", "5", "--keep", "0.75",
            "--report", str(page),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "score thresholds keeping 75% of the relevant results" in result.output
    assert "cosine similarity" in result.output and "BM25" in result.output
    result = runner.invoke(
        app,
        [
            "compare", "mem=memory://mode-thresholds", "--queries", str(qfile), "--mode", "text",
            "--keep", "0.75", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    relevant, other = direct_scores(memory, "text", 10)
    threshold, kept, dropped = direct_threshold(relevant, other, 0.75)
    assert row["scores"]["kind"] == "BM25" and row["scores"]["keep"] == 0.75
    assert row["threshold"] == row["scores"]["threshold"] == pytest.approx(threshold)
    assert (row["scores"]["relevant_kept"], row["scores"]["other_dropped"]) == pytest.approx((kept, dropped))
    assert row["scores"]["relevant"]["n"] == len(relevant) and row["scores"]["other"]["n"] == len(other)
    assert row["model"] == EMBEDDER.model_id
    bad = runner.invoke(
        app, ["compare", "memory://mode-thresholds", "--queries", str(qfile), "--mode", "text", "--keep", "0"]
    )
    assert bad.exit_code == 2 and "keep must be in (0, 1]" in bad.output

    # the HTML report: self-contained, one distribution plot per store and mode with its threshold
    source = page.read_text()
    assert re.findall(r"https?://[^\"' <]+", source) == ["http://www.w3.org/2000/svg"] * 6
    assert source.count('class="plot scores"') == 4
    assert source.count('class="threshold"') == 4
    shot = tmp_path / "modes.png"
    dom = render(page, screenshot=shot, size="1200,2000")
    rendered = re.search(r'data-plots-rendered="(\d+)"', dom)
    assert rendered is not None and int(rendered.group(1)) == 6  # 2 bar charts + 4 distributions
    assert len(re.findall(r"min_score [-0-9.e]+: keeps \d+%", dom)) == 4
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1200, 2000)
    assert len(png) > 50_000  # a blank page compresses to a few kB
