"""The public surface: names, imports, URLs, registry, errors."""

import json
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import vectorport
from vectorport import ConfigurationError, NotFoundError, NotInstalledError, mask_url
from vectorport.backends import Backend

PINNED_ALL = [
    "BackendError",
    "BackendUnavailableError",
    "BaseStore",
    "Batch",
    "Capabilities",
    "CollectionSpec",
    "ConfigurationError",
    "ConflictError",
    "Embedder",
    "Feature",
    "FilterError",
    "Include",
    "InvalidNameError",
    "Match",
    "MetadataRules",
    "Metric",
    "NameRule",
    "NotFoundError",
    "NotInstalledError",
    "QueryResult",
    "Record",
    "RetryPolicy",
    "ScanPage",
    "StoreURL",
    "TransientError",
    "UnsupportedError",
    "UnsupportedFeatureError",
    "UnsupportedFilterError",
    "ValidationError",
    "VectorStore",
    "VectorportError",
    "__version__",
    "available_backends",
    "connect",
    "mask_url",
]


def test_all_is_pinned() -> None:
    extra = sorted(set(vectorport.__all__) - set(PINNED_ALL))
    missing = sorted(set(PINNED_ALL) - set(vectorport.__all__))
    # New public names are fine only when added here on purpose.
    assert not missing, f"removed from vectorport.__all__: {missing}"
    assert set(extra) <= {
        "SupportsHybridSearch",
        "SupportsTextSearch",
        "hybrid_search_of",
        "text_search_of",
        "migrate",
        "MigrationReport",
        "sync",
        "SyncReport",
        "verify",
        "compare",
        "ComparisonResult",
        # the protocol with awaitable methods (vectorport.aconnect)
        "aconnect",
        "AsyncStore",
    }, extra
    for name in vectorport.__all__:
        assert hasattr(vectorport, name), name


def _fresh_process(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a new interpreter (what it imports is what a fresh process imports)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


def test_import_loads_no_driver() -> None:
    code = (
        "import sys, vectorport, vectorport.filters, vectorport.cli; "
        "heavy = {'psycopg', 'chromadb', 'boto3', 'botocore', 'torch', 'sentence_transformers', "
        "'voyageai', 'hypothesis', 'pytest', 'ray', 'pyarrow', 'vectorport.ray'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = _fresh_process(code)
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://bob:s3cr%40t@db:5432/app?table=docs", "postgresql://bob:***@db:5432/app?table=docs"),
        (
            "supabase://ref.supabase.co/b/i?key=eyJhbGci&region=x",
            "supabase://ref.supabase.co/b/i?key=***&region=x",
        ),
        ("chroma+http://h:8000?collection=d&token=abc", "chroma+http://h:8000?collection=d&token=***"),
        ("memory://docs", "memory://docs"),
        (
            "postgresql://u@h/db?table=t&key_column=id&sslpassword=p&passfile=/f&api_key=k",
            "postgresql://u@h/db?table=t&key_column=id&sslpassword=***&passfile=***&api_key=***",
        ),
        (
            "s3vectors://b/i?aws_session_token=t&auth_provider=x.Y&secretKey=s&Authorization=a",
            "s3vectors://b/i?aws_session_token=***&auth_provider=x.Y&secretKey=***&Authorization=***",
        ),
    ],
)
def test_secrets_are_masked(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    parsed = vectorport.StoreURL.parse(url)
    assert str(parsed) == masked and "s3cr" not in repr(parsed) and "eyJ" not in repr(parsed)


def test_bad_urls_and_schemes() -> None:
    with pytest.raises(ConfigurationError, match="not a store URL"):
        vectorport.connect("docs")
    with pytest.raises(ConfigurationError, match="no backend for the URL scheme 'nosuch'"):
        vectorport.connect("nosuch://x")


def test_missing_driver_names_the_extra() -> None:
    info = Backend(
        "fancy", "fancy_mod", "fancy_mod:Store", extra="fancy", requires=("surely_not_installed_mod",)
    )
    assert not info.installed
    with pytest.raises(NotInstalledError, match=r"pip install 'vectorport\[fancy\]'") as exc:
        info.load()
    assert isinstance(exc.value, ImportError)


def test_open_missing_collection_and_spec_mismatch() -> None:
    with pytest.raises(NotFoundError, match="pass dimension="):
        vectorport.connect("memory://api-missing")
    store = vectorport.connect("memory://api-spec", dimension=3, metric="euclidean")
    try:
        with pytest.raises(ConfigurationError, match="dimension 3, not 4"):
            vectorport.connect("memory://api-spec", dimension=4)
        with pytest.raises(ConfigurationError, match="euclidean metric, not cosine"):
            vectorport.connect("memory://api-spec", dimension=3, metric="cosine")
        assert vectorport.connect("memory://api-spec").spec.metric is vectorport.Metric.EUCLIDEAN
        with pytest.raises(ConfigurationError, match="unknown metric"):
            vectorport.connect("memory://api-other", dimension=3, metric="manhattan")
    finally:
        store.drop()


def test_backends_json_lists_every_registered_backend() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "vectorport", "backends", "--json"], capture_output=True, text=True, check=True
    )
    rows = json.loads(out.stdout)["backends"]
    registered = {ep.name for ep in entry_points(group="vectorport.backends")}
    assert [row["name"] for row in rows] == sorted(registered)
    for row in rows:
        assert row["schemes"] and (row["capabilities"] is not None) == row["installed"], row


def test_info_cli_and_exit_codes() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "vectorport", "info", "memory://nothing-here"], capture_output=True, text=True
    )
    assert out.returncode == 2
    assert "does not exist" in out.stderr and out.stdout == ""


def test_all_extra_installs_every_backend() -> None:
    """``pip install 'vectorport[all]'`` brings every registered backend's driver."""
    import re
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    (spec,) = extras["all"]
    bundled = set(re.fullmatch(r"vectorport\[(.*)\]", spec).group(1).split(","))  # type: ignore[union-attr]
    for found in vectorport.available_backends():
        if found.extra:
            assert found.extra in extras and found.extra in bundled, found.name


def test_listing_the_backends_imports_no_driver() -> None:
    code = (
        "import sys, vectorport; names = [b.name for b in vectorport.available_backends()]; "
        "print(sorted(m for m in ('psycopg', 'chromadb', 'boto3', 'pyarrow') if m in sys.modules))"
    )
    out = _fresh_process(code)
    assert out.stdout.strip() == "[]", out.stdout


def test_opening_a_store_loads_no_alias_phase_nor_ingest() -> None:
    """Resolving a URL scheme loads every backend's descriptor: the alias's is its package, which
    loads its phases (the backfill, the ingest embedders and loaders) only when they are asked for;
    the CLI's ``alias status`` imports its HTML charts (and the quality figures) only for a report."""
    code = (
        "import sys, vectorport; s = vectorport.connect('memory://api-lazy', dimension=2); s.drop(); "
        "import vectorport.alias as a; listed = set(a.__all__) <= set(dir(a)); "
        "opened = sorted(m for m in sys.modules "
        "if m.startswith(('vectorport.ingest', 'vectorport.alias._'))); "
        "import vectorport.cli; "
        "cli = sorted(m for m in sys.modules if m.startswith(('vectorport.alias._html', "
        "'vectorport.alias._quality', 'vectorport.alias._backfill'))); "
        "print(listed, opened, cli)"
    )
    out = _fresh_process(code)
    assert out.stdout.strip() == "True [] []", out.stdout
    from vectorport.alias import AliasReport, create  # loaded when asked for

    assert callable(create) and AliasReport.__name__ == "AliasReport"


def test_migrate_is_a_plain_package_whose_run_migrates() -> None:
    """``vectorport.migrate`` is a package like any other (no class swapped in to make it
    callable: the deprecated ``vectorport.migrate(...)`` call is gone, see the changelog)."""
    import types

    assert type(vectorport.migrate) is types.ModuleType
    assert not callable(vectorport.migrate)
    store = vectorport.connect("memory://api-old-migrate", dimension=2)
    try:
        store.upsert([vectorport.Record("a", [1, 0])])
        assert (
            vectorport.migrate.run("memory://api-old-migrate", "memory://api-new-copy").status == "verified"
        )
    finally:
        store.drop()
        vectorport.connect("memory://api-new-copy").drop()
