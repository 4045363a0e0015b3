"""What a reader of the HTML report sees: numbers never wrap mid-value, a run without gates
says so (and the Markdown says the same), one slow outlier does not flatten the latency
distribution, and a filtered run shows the per-filter view."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import pytest

import vectorport
from vectorport import Include, Match
from vectorport._models import Vector
from vectorport.backends.memory import MemoryStore
from vectorport.compare._html import CSS, line_chart
from vectorport.filters import FilterNode
from vectorport.testing import clustered_records

from ._doubles import open_double

pytestmark = pytest.mark.memory


class OneSlowQueryStore(MemoryStore):
    """Answers exactly, but its first timed query stalls (a GC pause, a cold cache)."""

    calls = 0

    def _search(
        self,
        vector: Vector,
        k: int,
        where: FilterNode | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        type(self).calls += 1
        if type(self).calls == 3:  # after the 2 warm-up queries
            time.sleep(0.25)
        return super()._search(vector, k, where, include, params)


@pytest.fixture
def data() -> Any:
    store = vectorport.connect("memory://html-read", dimension=8)
    store.upsert(clustered_records(300, 8, seed=4))
    yield store
    store.drop()


def test_numbers_never_wrap(data: Any) -> None:
    page = vectorport.compare([data], 5, k=5, warmup=0).to_html()
    rule = re.search(r"th,td\{[^}]*\}", CSS)
    assert rule is not None and "white-space:nowrap" in rule.group(0)
    assert re.search(r"td\.l,th\.l\{[^}]*white-space:normal", CSS)  # labels may wrap, numbers not
    assert page.count('<div class="scroll"><table') == page.count("<table")  # wide tables scroll


def test_no_gates_is_said_as_such(data: Any, tmp_path: Any) -> None:
    result = vectorport.compare([data], 5, k=5, warmup=0, max_missing=None)
    assert result.passed and not result.gate_results
    page = result.write_html(tmp_path / "r.html").read_text()
    markdown = result.write_markdown(tmp_path / "r.md").read_text()
    assert "no gates set" in page and "no gates set" in markdown.splitlines()[0]
    gated = vectorport.compare([data], 5, k=5, warmup=0, min_recall=0.5, max_violations=0)
    page = gated.write_html(tmp_path / "g.html").read_text()
    markdown = gated.write_markdown(tmp_path / "g.md").read_text()
    n = len(gated.gate_results)
    assert f"all {n} gates passed" in page and f"all {n} gates passed" in markdown.splitlines()[0]


def _median_x(svg: str) -> float:
    """x of the point where the first line reaches half the queries, as a fraction of the plot."""
    points = re.search(r'<polyline class="line"[^>]*points="([^"]+)"', svg)
    assert points is not None
    pts = [tuple(map(float, p.split(","))) for p in points.group(1).split()]
    top, ph, left, pw = 46, 300 - 46 - 40, 60, 760 - 60 - 20
    median = next(x for x, y in pts if (top + ph - y) / ph >= 0.5)
    return (median - left) / pw


def test_one_slow_outlier_does_not_flatten_the_latency_distribution() -> None:
    fast = [0.2 + 0.01 * i for i in range(99)]
    svg = line_chart("cdf", "latency", [("store", [*fast, 250.0])], x_label="ms", y_label="f", log_x=True)
    assert _median_x(svg) > 0.2  # on a linear axis it sits at 0.001 of the width
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', svg)
    assert ticks[0] == "0.1" and ticks[-1] == "1000"


def test_the_report_uses_the_log_axis_and_shows_filters(data: Any, tmp_path: Any) -> None:
    OneSlowQueryStore.calls = 0
    slow = open_double(OneSlowQueryStore, "html-read")
    result = vectorport.compare(
        {"slow": slow}, 12, k=5, warmup=2, filter=[None, {"lang": "en"}], min_recall=0.9
    )
    page = result.write_html(tmp_path / "r.html").read_text()
    cdf = page[page.index('id="plot-latency-cdf"') :]
    cdf = cdf[: cdf.index("</svg>")]
    # real latencies vary with the machine's load: the spread itself is pinned on fixed data
    # by test_one_slow_outlier_does_not_flatten_the_latency_distribution
    assert "log scale" in cdf
    assert 'id="plot-recall-filter"' in page and "<h2>Per filter</h2>" in page


def test_every_column_fits_at_1280_px_and_the_config_is_folded(data: Any, tmp_path: Any) -> None:
    other = vectorport.connect("memory://html-read-lossy", dimension=8)
    other.upsert(clustered_records(300, 8, seed=4)[5:])
    try:
        result = vectorport.compare(
            {"full": data, "lossy": other}, 6, k=5, warmup=0, filter=[None, {"lang": "en"}], min_recall=0.5
        )
    finally:
        other.drop()
    page = result.to_html()
    assert "max-width:1100px" not in CSS
    assert re.search(r"<details><summary>Run configuration[^<]*</summary><pre>", page)
    for header in ("records", "missing", "p95 ms", "p99 ms", "QPS"):
        assert f">{header}</th>" in page, header
    assert "lossy lacks 5 record(s) of the truth" in page
    path = tmp_path / "wide.html"
    path.write_text(page)
    from ._chromium import render

    dom = render(path, size="1280,2400")
    assert 'data-tables-cut="0"' in dom  # no table needs its scroll bar: every column is visible


def test_the_same_inputs_give_the_same_gates(data: Any) -> None:
    from vectorport.exceptions import UnsupportedFilterError

    from ._doubles import PostFilteringStore, open_double

    class Refusing(PostFilteringStore):
        def _compile_filter(self, where: Any) -> Any:
            raise UnsupportedFilterError("no filters here")

    args: dict[str, Any] = {"k": 5, "warmup": 0, "filter": [None, {"lang": "en"}, {"stars": {"$lt": 30}}]}
    gates = {"min_recall": 0.9, "max_underfill": 0.0, "min_overlap": 0.5, "max_violations": 0}
    exact = vectorport.compare({"a": data, "b": data}, 5, **args, **gates)
    refused = vectorport.compare({"a": data, "b": open_double(Refusing, "html-read")}, 5, **args, **gates)

    def shape(result: Any) -> list[tuple[str, str, str | None]]:
        return [(g.gate, g.subject, g.filter) for g in result.gate_results]

    assert shape(exact) == shape(refused)
    assert not refused.passed and exact.passed
