"""pytest plugin: parity checks between vector stores in a project's own test suite.

Registered as a pytest11 entry point named after this module, so it loads by itself and an
explicit ``-p vectorport.testing.plugin`` does not register it twice. It provides:

* the ``vectorport_compare`` fixture: call it like :func:`vectorport.compare`; when a gate fails
  the test fails with the failed gates and diffs of the worst queries against exact search;
* :func:`assert_parity`, the same check as a plain function (raises
  :class:`~vectorport.compare.GateFailure`, an ``AssertionError``);
* the ``vectorport_verify`` fixture and :func:`assert_same`: :func:`vectorport.migrate.verify`
  (counts, keys, vectors, metadata, text), failing with the differences ``vectorport verify``
  prints (a :class:`DataMismatch`, an ``AssertionError``);
* ``--vectorport-report DIR``: also write each comparison's JSON and HTML report to ``DIR``
  (one pair of files per test), for CI artifacts;
* one marker per registered backend (its name: ``pytest -m pgvector``), read from the
  ``vectorport.backends`` entry points, and the session fixture ``vectorport_servers``
  (:class:`vectorport.testing.backends.ServerPool`): the backends' local test servers, each
  started on first use.

::

    def test_pgvector_answers_like_chroma(vectorport_compare):
        vectorport_compare(
            {"chroma": CHROMA_URL, "pgvector": PG_URL}, 200, k=10,
            filter=[None, {"lang": "en"}], min_recall=0.95, max_violations=0, min_overlap=0.9,
        )

    def test_the_copy_is_the_source(vectorport_verify):
        vectorport_verify(CHROMA_URL, PG_URL)

Every comparison also gates on data: a store lacking any record of the truth fails
(``max_missing=0`` unless given), whatever its recall.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._registry import available_backends
from ..compare import ComparisonResult, compare
from .backends import ServerPool, server_pool

if TYPE_CHECKING:
    from ..migrate import VerifyReport

__all__ = [
    "DataMismatch",
    "assert_parity",
    "assert_same",
    "pytest_addoption",
    "pytest_configure",
    "vectorport_compare",
    "vectorport_servers",
    "vectorport_verify",
]

_GATES = ("min_recall", "max_violations", "min_overlap", "max_underfill", "gates")


class DataMismatch(AssertionError):
    """Two stores do not hold the same data. ``str()`` is what ``vectorport verify`` prints
    about the differences; ``report`` is the :class:`~vectorport.migrate.VerifyReport`."""

    def __init__(self, report: VerifyReport) -> None:
        super().__init__(report.explain())
        self.report = report


def assert_same(source: Any, target: Any, **kwargs: Any) -> VerifyReport:
    """:func:`vectorport.migrate.verify` (same arguments: stores or URLs, ``metadata_policy``,
    ``text_key``, ``sample_queries``…), then raise :class:`DataMismatch` unless the data is
    equal: one missing, extra or changed record (vector, metadata value or text) fails.

    Search quality is judged only when ``sample_queries`` is given (default 0 here).
    """
    from ..migrate import verify

    kwargs.setdefault("sample_queries", 0)
    report = verify(source, target, **kwargs)
    if not report.ok:
        raise DataMismatch(report)
    return report


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


def pytest_configure(config: pytest.Config) -> None:
    for found in available_backends():
        config.addinivalue_line("markers", f"{found.name}: tests that touch the {found.name} backend")


@pytest.fixture(scope="session")
def vectorport_servers() -> Iterator[ServerPool]:
    """The registered backends' local test servers, each started on first use, stopped at the
    end of the session."""
    yield from server_pool()


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
        if not result.passed:  # outside any except block: the failure is printed once
            pytest.fail(f"vectorport parity check failed\n{result.explain()}", pytrace=False)
        return result

    return run


@pytest.fixture
def vectorport_verify() -> Callable[..., VerifyReport]:
    """Verify that two stores hold the same data (arguments of :func:`assert_same`) and fail
    the test with the differences ``vectorport verify`` prints. Returns the report."""

    def run(source: Any, target: Any, **kwargs: Any) -> VerifyReport:
        try:
            return assert_same(source, target, **kwargs)
        except DataMismatch as exc:
            message = str(exc)
        pytest.fail(f"vectorport verify failed\n{message}", pytrace=False)

    return run
