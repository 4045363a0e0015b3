"""Read-back verification: into a paced target (a bucket index's write cap), the copy reads each
acknowledged batch back by key while later batches wait for the cap, and verification lists the
target's keys once instead of reading every vector back.

Damage is made with boto3, not vectorport: before a batch is read back (found from the
content digests), and after it (a deleted or added key, found from the final key listing). A
record rewritten with other content after its read-back is what that listing cannot see; the
standalone ``verify`` reads the target again and finds it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vectorport
from vectorport import Record
from vectorport._digest import BinSums
from vectorport.engine._digestscan import page_digests
from vectorport.migrate._readback import ReadBack
from vectorport.verify._verify import verify_stores

from ._migrate_data import DIM, N, fit_to, tricky_records
from ._raw import bucket_client

pytestmark = pytest.mark.s3vectors

LoadedSource = Callable[[str], tuple[str, list[Any]]]


@pytest.mark.pgvector
@pytest.mark.parametrize("single_pass", [True, False], ids=["single-pass", "two-pass"])
def test_paced_bucket_target_is_verified_from_the_read_back(
    single_pass: bool, loaded_source: LoadedSource, url_for: Callable[..., str]
) -> None:
    source_url, _ = loaded_source("pgvector")
    target_url = url_for("s3vectors")
    report = vectorport.migrate.run(
        source_url, target_url, single_pass=single_pass, metadata_policy="flatten"
    )
    assert report.status == "verified", report.to_json()
    v = report.verification
    assert v is not None and v.method == "digest" and v.read_back
    assert v.compared == N and v.target_scanned == N and v.target_count == N
    assert v.bins is not None and v.bins["differing"] == 0
    assert v.queries is not None and v.queries.ok and v.queries.queries == 20
    assert v.to_dict()["read_back"] is True
    keyed = vectorport.verify(source_url, target_url, metadata_policy="flatten", method="keyed")
    assert keyed.ok and keyed.compared == N, keyed.to_dict()


def _bucket_with(url_for: Callable[..., str], records: list[Record]) -> tuple[str, Any]:
    url = url_for("s3vectors")
    target = vectorport.connect(url, dimension=DIM)
    target.upsert(records)
    return url, target


def test_damage_before_and_after_the_read_back(url_for: Callable[..., str]) -> None:
    probe = vectorport.connect(url_for("s3vectors"), dimension=DIM)
    records = fit_to(tricky_records(600, DIM), probe.capabilities.metadata)
    probe.drop()
    source = vectorport.connect("memory://read-back-source", dimension=DIM)
    source.upsert(records)
    target_url, target = _bucket_with(url_for, records)
    parts = 16
    copied = BinSums(parts)
    for seg, digest in page_digests(records, None, parts):
        copied.add(seg, digest)
    keys = sorted(r.key for r in records)
    before, gone, after = keys[3], keys[100], keys[200]
    client, where = bucket_client(target_url)

    def rewrite(key: str) -> None:
        got = client.get_vectors(**where, keys=[key], returnData=True, returnMetadata=True)["vectors"][0]
        meta = {**got["metadata"], "count": -1}
        client.put_vectors(**where, vectors=[{"key": key, "data": got["data"], "metadata": meta}])

    rewrite(before)  # the target changed the record before it was read back
    read_back = ReadBack(target, parts)
    for start in range(0, len(keys), 100):
        read_back.written(keys[start : start + 100])
    read_back.close()
    assert read_back.usable and read_back.records == len(records)
    client.delete_vectors(**where, keys=[gone])
    client.put_vectors(**where, vectors=[{"key": "zz-extra", "data": {"float32": [0.5] * DIM}}])
    rewrite(after)  # same key, other content, after its read-back: the listing cannot see it

    report = verify_stores(source, target, copied=copied, read_back=read_back, sample_queries=0)
    assert report.read_back and report.method == "digest"
    assert report.missing.items == [gone]
    assert report.extra.items == ["zz-extra"]
    assert [m["key"] for m in report.metadata.items] == [before]
    assert report.target_scanned == len(records)  # one deleted, one added
    assert report.bins is not None and 1 <= report.bins["differing"] <= 3

    full = vectorport.verify("memory://read-back-source", target_url)
    assert not full.read_back
    assert sorted(m["key"] for m in full.metadata.items) == sorted([before, after])
    assert full.missing.items == [gone] and full.extra.items == ["zz-extra"]
    source.drop()
    target.drop()


def test_a_failed_read_back_falls_back_to_reading_the_target(url_for: Callable[..., str]) -> None:
    records = [Record(f"doc/{i}.md#0", [float(i + 1)] + [0.0] * (DIM - 1), {"i": i}, "t") for i in range(50)]
    source = vectorport.connect("memory://read-back-fallback", dimension=DIM)
    source.upsert(records)
    _, target = _bucket_with(url_for, records)
    copied = BinSums(16)
    for seg, digest in page_digests(records, None, 16):
        copied.add(seg, digest)
    read_back = ReadBack(target, 16)
    read_back.written(["bad\x00key"])  # refused by the store's key validation: the reader stops
    read_back.close()
    assert not read_back.usable and read_back.error is not None
    report = verify_stores(source, target, copied=copied, read_back=read_back, sample_queries=0)
    assert report.ok and not report.read_back and report.target_scanned == 50
    source.drop()
    target.drop()


@pytest.mark.pgvector
def test_unpaced_target_is_scanned_not_read_back(
    loaded_source: LoadedSource, url_for: Callable[..., str]
) -> None:
    source_url, _ = loaded_source("pgvector")
    target_url = url_for("s3vectors", write_rate=0)  # pacing off: reads would compete with writes
    report = vectorport.migrate.run(source_url, target_url, single_pass=True, metadata_policy="flatten")
    v = report.verification
    assert report.status == "verified" and v is not None
    assert v.method == "digest" and not v.read_back and v.target_scanned == N
