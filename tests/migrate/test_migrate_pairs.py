"""Every ordered pair of the registered backends: 5k tricky records, the plan says what
the target cannot hold, the policy run verifies green, records read back as the transform says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vectorport
from vectorport._json import json_equal
from vectorport.migrate import MetadataPolicy, PlanRefusedError, Transformer
from vectorport.testing.backends import pair_params

from ._migrate_data import N, all_records

LoadedSource = Callable[[str], tuple[str, list[Any]]]

PAIRS = pair_params()


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_pair_plans_copies_and_verifies(
    src: str, dst: str, loaded_source: LoadedSource, url_for: Callable[..., str]
) -> None:
    source_url, records = loaded_source(src)
    target_url = url_for(dst)
    target_rules = probe_rules(target_url)
    strict = Transformer(target_rules, MetadataPolicy.ERROR)
    expected_problems = {r.key for r in records if strict.apply(r.metadata, r.text).problems}
    try:
        report = vectorport.migrate.run(source_url, target_url, concurrency=4)
    except PlanRefusedError as exc:
        # the plan names exactly the records the target cannot hold, and refuses them
        probe = exc.plan
        assert expected_problems, probe.reasons()
        assert probe.records == N and not probe.incompatible and probe.key_problems is None
        assert probe.records_with_problems == len(expected_problems)
        named = {o["key"] for g in probe.metadata_problems.values() for o in g.occurrences.items}
        assert named and named <= expected_problems
        assert "metadata_policy=" in (probe.suggestion() or "")
        assert probe.policy_outcomes["flatten"] == 0
        with pytest.raises(vectorport.NotFoundError):
            vectorport.connect(target_url).close()  # nothing written, not even created
        report = vectorport.migrate.run(source_url, target_url, metadata_policy="flatten", concurrency=4)
    else:
        assert not expected_problems, f"{len(expected_problems)} lossy records were not refused"
    policy = "flatten" if expected_problems else "error"
    assert report.status == "verified", report.to_json()
    assert report.plan is not None and report.plan.records == N
    v = report.verification
    assert v is not None and v.compared == N and v.target_count == N and not v.duplicates
    assert v.queries is not None and v.queries.ok
    # spot-check: the target holds what the transform says, record by record
    flatten = Transformer(target_rules, policy)
    with vectorport.connect(target_url) as target:
        got = all_records(target)
        assert len(got) == N
        target.drop()
    for rec in records[:: N // 50]:
        want = flatten.apply(rec.metadata, rec.text)
        assert json_equal(got[rec.key].metadata, want.metadata), rec.key
        assert got[rec.key].text == want.text


def probe_rules(url: str) -> Any:
    from vectorport._registry import resolve
    from vectorport._url import StoreURL

    parsed = StoreURL.parse(url)
    store = resolve(parsed.scheme).load().from_url(parsed)
    try:
        return store.capabilities.metadata
    finally:
        store.close()
