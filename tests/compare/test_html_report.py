"""The HTML report renders offline in headless Chromium with every plot laid out."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

import vectorport
from vectorport.testing import clustered_records

from ._chromium import render
from ._doubles import PostFilteringStore, open_double

pytestmark = pytest.mark.memory

PLOTS = {
    "plot-recall",
    "plot-latency",
    "plot-recall-filter",
    "plot-latency-filter",
    "plot-latency-cdf",
    "plot-overlap",
}


def test_report_renders_offline_with_its_plots(tmp_path: Path) -> None:
    store = vectorport.connect("memory://html-a", dimension=8)
    store.upsert(clustered_records(400, 8, seed=2))
    try:
        broken = open_double(PostFilteringStore, "html-a")
        result = vectorport.compare(
            {"exact <a>": store, "post&filter": broken},
            15,
            k=5,
            filter=[None, {"lang": "en"}, {"tags": {"$in": ["faq", "api"]}}],
            min_recall=0.9,
        )
    finally:
        store.drop()
    page = result.write_html(tmp_path / "report.html")
    source = page.read_text()
    # self-contained: nothing fetched (the only URL is the SVG namespace), labels escaped
    assert re.findall(r"https?://[^\"' <]+", source) == ["http://www.w3.org/2000/svg"] * len(PLOTS)
    assert "exact &lt;a&gt;" in source and "post&amp;filter" in source
    assert "<a>" not in source
    shot = tmp_path / "report.png"
    dom = render(page, screenshot=shot)
    rendered = re.search(r'data-plots-rendered="(\d+)"', dom)
    assert rendered is not None, dom[:500]
    ids = set(re.findall(r'<svg class="plot" id="([^"]+)"', dom))
    assert ids == PLOTS
    assert int(rendered.group(1)) == len(PLOTS)  # every plot has a laid-out box with marks
    assert len(re.findall(r'<rect class="bar"', dom)) >= 2 + 6 + 6 + 6
    assert "gate(s) failed" in dom and "Failures in detail" in dom
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1200, 2400)
    assert len(png) > 50_000  # a blank page compresses to a few kB
