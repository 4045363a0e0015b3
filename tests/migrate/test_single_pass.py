"""``migrate(single_pass=True)``: the source is read once, the plan's checks run on the records
as they are copied, and verification reads only the target against the copy's digests.

On every ordered pair of real backends: a refusal found mid-copy leaves no target behind and
names the same records as the two-pass plan; a policy run verifies by digest, and the keyed
verification (every record fetched back by key) agrees. Damage made afterwards with the
backend's own client is found from the digests kept in the checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport import Record
from vectorport.engine._checkpoint import Checkpoint
from vectorport.migrate import MetadataPolicy, PlanRefusedError, Transformer
from vectorport.testing.backends import pair_params

from ._migrate_data import N
from .test_migrate_pairs import probe_rules

LoadedSource = Callable[[str], tuple[str, list[Any]]]


@pytest.mark.parametrize(("src", "dst"), pair_params())
def test_single_pass_refuses_like_the_plan_and_verifies_by_digest(
    src: str, dst: str, loaded_source: LoadedSource, url_for: Callable[..., str], tmp_path: Path
) -> None:
    source_url, records = loaded_source(src)
    target_url = url_for(dst)
    strict = Transformer(probe_rules(target_url), MetadataPolicy.ERROR)
    expected_problems = {r.key for r in records if strict.apply(r.metadata, r.text).problems}
    ck = tmp_path / "ck.json"
    policy = "error"
    if expected_problems:
        with pytest.raises(PlanRefusedError) as caught:
            vectorport.migrate.run(source_url, target_url, single_pass=True, checkpoint=ck)
        plan = caught.value.plan
        # the whole source was checked, as the two-pass plan checks it
        assert plan.records == N and plan.records_with_problems == len(expected_problems)
        named = {o["key"] for g in plan.metadata_problems.values() for o in g.occurrences.items}
        assert named and named <= expected_problems
        assert "metadata_policy=" in (plan.suggestion() or "")
        with pytest.raises(vectorport.NotFoundError):
            vectorport.connect(target_url).close()  # the target it created is gone
        assert not ck.exists()
        policy = "flatten"
    report = vectorport.migrate.run(
        source_url, target_url, single_pass=True, checkpoint=ck, metadata_policy=policy
    )
    assert report.status == "verified", report.to_json()
    assert report.plan is not None and report.plan.records == N and not report.notes
    v = report.verification
    assert v is not None and v.method == "digest" and v.compared == N and v.target_count == N
    assert v.bins is not None and v.queries is not None and v.queries.ok
    keyed = vectorport.verify(source_url, target_url, metadata_policy=policy, method="keyed")
    assert keyed.method == "keyed" and keyed.ok and keyed.compared == N, keyed.to_dict()

    # damage made with the target's own client is found from the digests in the checkpoint,
    # without reading the source again
    saved = Checkpoint.load(ck)
    assert saved is not None and saved.single_pass and saved.digests is not None
    assert saved.digests.total == N
    keys = sorted(r.key for r in records)
    gone, changed = keys[7], keys[42]
    with vectorport.connect(target_url) as target:
        (old,) = target.get([changed])
        target.delete([gone])
        target.upsert(
            [
                Record(changed, old.vector, old.metadata, (old.text or "") + " edited"),
                Record("zz-extra", old.vector, {}, None),
            ]
        )
    again = vectorport.migrate.run(
        source_url, target_url, single_pass=True, checkpoint=ck, metadata_policy=policy
    )
    assert again.already_complete and again.status == "differences"
    v = again.verification
    assert v is not None and v.method == "digest"
    assert v.missing.items == [gone] and v.extra.items == ["zz-extra"]
    assert [d["key"] for d in v.text.items] == [changed] and not v.vectors and not v.metadata
    with vectorport.connect(target_url) as target:
        target.drop()


@pytest.mark.memory
def test_single_pass_into_an_existing_target_plans_first() -> None:
    src = vectorport.connect("memory://single-pass-src", dimension=2)
    dst = vectorport.connect("memory://single-pass-dst", dimension=2)
    try:
        src.upsert([Record(f"k{i}", [1.0, float(i)], {"i": i}, "t") for i in range(50)])
        report = vectorport.migrate.run(src, dst, single_pass=True)
        assert report.status == "verified"
        assert any("single pass not used" in n and "target exists" in n for n in report.notes)
        assert report.timings["plan"] > 0 and report.plan is not None and report.plan.records == 50
    finally:
        src.drop()
        dst.drop()


@pytest.mark.memory
def test_unknown_verification_method_is_refused_before_any_read() -> None:
    src = vectorport.connect("memory://verify-method-src", dimension=2)
    try:
        src.upsert([Record("k", [1.0, 0.0])])
        with pytest.raises(vectorport.ConfigurationError, match="auto, digest or keyed"):
            vectorport.verify(src, "memory://verify-method-src", method="fast")
    finally:
        src.drop()


@pytest.mark.pgvector
def test_damage_made_with_psycopg_is_found_from_the_copy_digests(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    """The single-process digest path, with the damage made by psycopg, not vectorport."""
    from ._raw import pg_damage

    src = vectorport.connect("memory://single-pass-psycopg", dimension=4)
    try:
        src.upsert(
            [Record(f"k{i:04d}", [1.0, float(i), 0.5, -1.0], {"count": i}, f"t{i}") for i in range(3000)]
        )
        target_url = url_for("pgvector")
        ck = tmp_path / "ck.json"
        first = vectorport.migrate.run(src, target_url, single_pass=True, checkpoint=ck)
        assert first.status == "verified" and first.verification is not None
        assert first.verification.method == "digest"
        pg_damage(target_url, "k0007", "k0042", "zz-extra")
        again = vectorport.migrate.run(src, target_url, single_pass=True, checkpoint=ck)
        v = again.verification
        assert again.already_complete and again.status == "differences" and v is not None
        assert v.method == "digest" and v.bins is not None and 1 <= v.bins["differing"] <= 3
        assert v.missing.items == ["k0007"] and v.extra.items == ["zz-extra"]
        assert [d["key"] for d in v.metadata.items] == ["k0042"] and not v.vectors and not v.text
        with vectorport.connect(target_url) as target:
            target.drop()
    finally:
        src.drop()
