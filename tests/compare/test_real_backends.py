"""Every registered backend on clustered data, filters at several selectivities (the backends
and their markers come from the registry); a deliberately broken store is caught; the CLI runs
end to end on the backends another process can reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport import MetadataRules
from vectorport._features import Feature
from vectorport._registry import available_backends
from vectorport._url import StoreURL
from vectorport.testing import clustered_records
from vectorport.testing.backends import backend_names, targets

from ._doubles import PostFilteringStore, open_double

pytestmark = [getattr(pytest.mark, name) for name in backend_names()]

DIM = 32
N = 3000
# scalar fields only: every backend filters them natively (no nested objects for chroma/S3)
RECORDS = clustered_records(N, DIM, clusters=12, seed=7, rules=MetadataRules(nested_objects=False))
FILTERS: list[dict[str, Any] | None] = [
    None,  # 100 %
    {"lang": "en"},  # ~15 %
    {"stars": {"$gte": 90}},  # ~10 %
    {"cluster": 3, "draft": False},  # ~6 %
    {"stars": {"$lt": 3}, "lang": {"$ne": "fr"}},  # ~2 %
]
GATES = {"min_recall": 0.9, "max_violations": 0, "min_overlap": 0.85, "max_underfill": 0.0}


def _installed(name: str) -> bool:
    owner, _target = targets()[name]
    if not owner.installed:
        pytest.skip(f"the {name} backend is not installed")
    return True


@pytest.fixture(scope="module")
def stores(url_for: Callable[..., str]) -> Iterator[dict[str, str]]:
    urls = {name: url_for(name) for name in backend_names() if _installed(name)}
    opened = []
    for url in urls.values():
        store = vectorport.connect(url, dimension=DIM, metric="cosine")
        store.upsert(RECORDS)
        opened.append(store)
    yield urls
    for store in opened:
        store.drop()
        store.close()


def test_real_backends_answer_like_exact_search(stores: dict[str, str], tmp_path: Path) -> None:
    result = vectorport.compare(stores, 25, k=10, filter=FILTERS, warmup=5, **GATES)
    print(result)
    assert result.passed, result.explain()
    assert [s.backend for s in result.stores] == list(stores)
    assert len(result.groups) == len(FILTERS)
    selectivities = sorted(g.selectivity for g in result.groups)
    assert selectivities[0] < 0.05 and selectivities[-1] == 1.0
    for s in result.stores:
        assert s.overall.violations == 0 and s.overall.unknown == 0 and s.overall.refused == 0
        assert s.overall.distance_error_max < 1e-3, (s.label, s.overall.distance_error_max)
        with vectorport.connect(stores[s.label]) as opened:
            exact = opened.capabilities.exact
        assert s.overall.recall == 1.0 or not exact, s.label
    data = json.loads(result.to_json())
    for entry in data["config"]["stores"]:
        owner, _target = targets()[entry["backend"]]
        assert set(owner.requires) <= set(entry["versions"]), entry  # the drivers' versions
        assert entry["info"]["count"] == N, entry
    result.write_html(tmp_path / "real.html")


def test_broken_store_among_real_ones_fails_its_gates_only(stores: dict[str, str]) -> None:
    # the double is a memory store that filters after ranking; memory is the exact reference
    broken = open_double(PostFilteringStore, stores["memory"].removeprefix("memory://"))
    others = {label: url for label, url in stores.items() if label != "memory"}
    result = vectorport.compare(
        {**others, "broken": broken},
        10,
        k=10,
        filter=FILTERS[1:3],
        warmup=2,
        truth=stores["memory"],
        **GATES,
    )
    assert not result.passed
    failing = {
        (g.gate, g.subject.split(" vs ")[-1] if " vs " in g.subject else g.subject) for g in result.failures
    }
    assert ("max-underfill", "broken") in failing and ("min-recall", "broken") in failing
    assert all("broken" in g.subject for g in result.failures), [g.message for g in result.failures]


def _reachable_from_another_process(url_for: Callable[..., str]) -> list[tuple[str, str]]:
    """Per backend, its first test target any process can open while this one holds it (the
    backend says, ``processes``), with the URL of a fresh collection there: none for memory."""
    found = []
    for owner in available_backends():
        # a read-only backend (a parquet:// snapshot) cannot be filled here: it is compared
        # through the stores it was exported from
        if not owner.installed or Feature.WRITE not in owner.load().capabilities.features:
            continue
        for target in owner.tests:
            url = url_for(owner.target_name(target))
            if owner.load().processes(StoreURL.parse(url)) == "any":
                found.append((owner.target_name(target), url))
                break
    return found


def test_cli_on_real_backends(stores: dict[str, str], url_for: Callable[..., str], tmp_path: Path) -> None:
    # the CLI is a separate process: it reaches each backend through a target it can open
    # (chroma through its server, not the embedded directory this process holds)
    urls: dict[str, str] = {}
    made: list[str] = []
    for name, fresh in _reachable_from_another_process(url_for):
        if name in stores:
            urls[name] = stores[name]
            continue
        urls[name] = fresh
        made.append(urls[name])
        with vectorport.connect(urls[name], dimension=DIM, metric="cosine") as remote:
            remote.upsert(RECORDS)
    labels = [f"s{i}" for i in range(len(urls))]
    try:
        args = [
            *(f"{label}={url}" for label, url in zip(labels, urls.values(), strict=True)),
            "--sample", "15", "--k", "10", "--warmup", "3",
            "--filter", "null", "--filter", '{"lang": "en"}', "--filter", '{"stars": {"$lt": 3}}',
            "--output", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html"),
        ]  # fmt: skip
        env = {**os.environ, "COLUMNS": "200"}
        cmd = [sys.executable, "-m", "vectorport", "compare", *args]
        ok = subprocess.run(
            [*cmd, "--min-recall", "0.9", "--max-violations", "0"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "recall@10" in ok.stdout and "per filter" in ok.stdout
        data = json.loads((tmp_path / "r.json").read_text())
        assert [s["label"] for s in data["stores"]] == labels
        first_scheme = next(iter(urls.values())).split("://", 1)[0]
        assert data["config"]["truth"]["source"].startswith(f"{first_scheme}://")
        assert "<svg" in (tmp_path / "r.html").read_text()
        # a store that lost one record: the default max-missing gate fails (exit 1) and says so
        # (the last store: the first is the truth's source)
        assert len(urls) > 1
        lossy = RECORDS[len(RECORDS) // 2]
        with vectorport.connect(list(urls.values())[-1]) as last:
            last.delete([lossy.key])
        try:
            bad = subprocess.run(
                [*cmd, "--min-recall", "0.5"], capture_output=True, text=True, env=env, timeout=300
            )
        finally:
            with vectorport.connect(list(urls.values())[-1]) as last:
                last.upsert([lossy])  # the stores may be shared with other tests
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "gate failed: max-missing FAILED" in bad.stderr, bad.stderr
    finally:
        for url in made:
            with vectorport.connect(url) as remote:
                remote.drop()
