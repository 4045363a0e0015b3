"""pytest plugin: parity checks between vector stores in a project's own test suite.

Registered as a pytest11 entry point named after this module, so it loads by itself and an
explicit ``-p vectorport.testing.plugin`` does not register it twice. It provides:

* the ``vectorport_compare`` fixture: call it like :func:`vectorport.compare`; when a gate fails
  the test fails with the failed gates and diffs of the worst queries against exact search;
* :func:`assert_parity`, the same check as a plain function (raises
  :class:`~vectorport.compare.GateFailure`, an ``AssertionError``);
* ``--vectorport-report DIR``: also write each comparison's JSON and HTML report to ``DIR``
  (one pair of files per test), for CI artifacts.

::

    def test_pgvector_answers_like_chroma(vectorport_compare):
        vectorport_compare(
            {"chroma": CHROMA_URL, "pgvector": PG_URL}, 200, k=10,
            filter=[None, {"lang": "en"}], min_recall=0.95, max_violations=0, min_overlap=0.9,
        )
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..compare import ComparisonResult, GateFailure, compare

__all__ = ["assert_parity", "pytest_addoption", "vectorport_compare"]

_GATES = ("min_recall", "max_violations", "min_overlap", "max_underfill", "gates")


def assert_parity(*args: Any, **kwargs: Any) -> ComparisonResult:
    """:func:`vectorport.compare`, then raise :class:`GateFailure` if a gate failed.

    Without any gate argument, ``max_violations=0`` applies: a result outside the filter is
    never acceptable.
    """
    if not any(kwargs.get(name) is not None for name in _GATES):
        kwargs["max_violations"] = 0
    result = compare(*args, **kwargs)
    result.raise_for_gates()
    return result


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vectorport")
    group.addoption(
        "--vectorport-report",
        metavar="DIR",
        default=None,
        help="write the JSON and HTML report of every vectorport_compare call to DIR",
    )


def _slug(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150] or "comparison"


@pytest.fixture
def vectorport_compare(request: pytest.FixtureRequest) -> Callable[..., ComparisonResult]:
    """Run a comparison (arguments of :func:`vectorport.compare`) and fail the test with a
    readable diff when a gate fails. Returns the :class:`ComparisonResult` when every gate holds."""
    report_dir = request.config.getoption("--vectorport-report")
    calls = 0

    def run(*args: Any, **kwargs: Any) -> ComparisonResult:
        nonlocal calls
        calls += 1
        if not any(kwargs.get(name) is not None for name in _GATES):
            kwargs["max_violations"] = 0
        result = compare(*args, **kwargs)
        if report_dir:
            out = Path(report_dir)
            out.mkdir(parents=True, exist_ok=True)
            stem = _slug(request.node.nodeid) + (f"-{calls}" if calls > 1 else "")
            result.write_json(out / f"{stem}.json")
            result.write_html(out / f"{stem}.html")
        try:
            result.raise_for_gates()
        except GateFailure as exc:
            pytest.fail(f"vectorport parity check failed\n{exc}", pytrace=False)
        return result

    return run
