"""The pytest plugin, run in a separate pytest session (pytester) as a user's project would."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.memory
pytest_plugins = ["pytester"]

PROJECT_TESTS = """
import pytest
import vectorport
from vectorport.testing import clustered_records
from vectorport.testing.plugin import assert_parity
from vectorport.compare import GateFailure
from tests_compare_doubles import PostFilteringStore, open_double


@pytest.fixture(scope="module")
def url():
    s = vectorport.connect("memory://plugin-src", dimension=8)
    s.upsert(clustered_records(300, 8, seed=1))
    yield "memory://plugin-src"
    s.drop()


def test_parity_holds(url, vectorport_compare):
    result = vectorport_compare([url, url], 10, k=5, min_recall=1.0, min_overlap=1.0)
    assert result.passed


def test_broken_store_fails(url, vectorport_compare):
    broken = open_double(PostFilteringStore, "plugin-src")
    vectorport_compare({"exact": url, "broken": broken},
                       [r.vector for r in clustered_records(5, 8, seed=9)], k=5,
                       filter={"lang": "en"}, min_recall=0.95)


def test_assert_parity_defaults_to_no_violations(url):
    from tests_compare_doubles import LeakyFilterStore
    leaky = open_double(LeakyFilterStore, "plugin-src")
    with pytest.raises(GateFailure, match="max-violations"):
        assert_parity({"exact": url, "leaky": leaky}, 5, k=5, filter={"lang": "en"})
"""


def test_fixture_passes_and_fails_with_a_readable_diff(pytester: pytest.Pytester) -> None:
    from . import _doubles

    pytester.makepyfile(tests_compare_doubles=Path(_doubles.__file__).read_text(encoding="utf-8"))
    pytester.makepyfile(test_project=PROJECT_TESTS)
    reports = pytester.path / "reports"
    # No "-p": the plugin must load through its pytest11 entry point, as in a user's project.
    result = pytester.runpytest_subprocess(f"--vectorport-report={reports}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_broken_store_fails*",
            "*vectorport parity check failed*",
            "*min-recall FAILED: broken*recall@k*< 0.95*",
            "*worst queries*",
            "*- docs/file*",
        ]
    )
    assert "Traceback" not in result.stdout.str()  # pytrace=False: the diff, not a stack
    written = sorted(p.name for p in reports.iterdir())
    assert any(n.endswith("test_parity_holds.html") for n in written)
    assert any(n.endswith("test_broken_store_fails.json") for n in written)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param((), id="entry-point"),
        # Explicit -p on top of the entry point must not register the module twice.
        pytest.param(("-p", "vectorport.testing.plugin"), id="explicit-p"),
    ],
)
def test_plugin_registers_its_option(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    result = pytester.runpytest_subprocess(*args, "--help")
    result.stdout.fnmatch_lines(["*--vectorport-report=DIR*"])
    assert "already registered" not in result.stderr.str()


def test_plugin_can_be_disabled(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:vectorport.testing.plugin", "--help")
    assert "--vectorport-report" not in result.stdout.str()


DATA_TESTS = """
import pytest
import vectorport
from vectorport.testing import clustered_records

RECORDS = clustered_records(200, 8, seed=2)


@pytest.fixture
def urls():
    a = vectorport.connect("memory://plugin-a", dimension=8)
    b = vectorport.connect("memory://plugin-b", dimension=8)
    a.upsert(RECORDS)
    b.upsert(RECORDS)
    yield a, b
    a.drop()
    b.drop()


def test_same_data_passes(urls, vectorport_verify):
    assert vectorport_verify("memory://plugin-a", "memory://plugin-b").ok


def test_one_changed_value_fails(urls, vectorport_verify):
    r = RECORDS[3]
    urls[1].upsert([vectorport.Record(r.key, r.vector, {**r.metadata, "stars": -1}, r.text)])
    vectorport_verify("memory://plugin-a", "memory://plugin-b")


def test_lost_records_fail_the_comparison(urls, vectorport_compare):
    urls[1].delete([RECORDS[5].key])
    vectorport_compare({"a": "memory://plugin-a", "b": "memory://plugin-b"}, 5, k=5, min_recall=0.0)
"""


def test_verify_fixture_and_missing_records_fail_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_data=DATA_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*vectorport verify failed*",
            "*metadata differences: 1*",
            f"*metadata: *{clustered_key(3)}*",
            "*vectorport parity check failed*",
            f"*max-missing FAILED: b: 1 records of the truth missing > 0: '{clustered_key(5)}'*",
        ]
    )
    assert "During handling" not in out and "Traceback" not in out
    # printed once, not once per chained exception (the short summary repeats it in full where
    # pytest does not shorten it, as under CI=true: count the failure reports only)
    assert out.split("short test summary info")[0].count("max-missing FAILED: b") == 1


def clustered_key(i: int) -> str:
    from vectorport.testing import clustered_records

    return clustered_records(200, 8, seed=2)[i].key
