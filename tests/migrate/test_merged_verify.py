"""Merged-digest verification (the engine-neutral core of ``verify --engine ray``), run by the
in-process runner: the single-process verdict, counts and difference lists, after transforms."""

from __future__ import annotations

from typing import Any

import pytest

import vectorport
from vectorport import Record
from vectorport._digest import MAX_BINS
from vectorport.migrate import VerifyReport
from vectorport.verify._merged import verify_merged

from ._migrate_data import DIM, tricky_records

pytestmark = pytest.mark.memory


def _lists(report: VerifyReport) -> tuple[object, ...]:
    return (
        report.status,
        report.source_count,
        report.target_count,
        report.compared,
        sorted(report.missing.items),
        sorted(report.extra.items),
        sorted(str(m["key"]) for m in report.metadata.items),
        sorted(str(m["key"]) for m in report.text.items),
        sorted(str(m["key"]) for m in report.vectors.items),
        report.differences,
    )


def test_merged_equals_single_process_after_a_transform_and_damage() -> None:
    n = 3_000
    records = [
        Record(r.key, r.vector, {**r.metadata, "page_content": f"body {i}"}, None)
        for i, r in enumerate(tricky_records(n, DIM))
    ]
    source = vectorport.connect("memory://merged-src", dimension=DIM)
    source.upsert(records)
    try:
        report = vectorport.migrate.run("memory://merged-src", "memory://merged-dst", text_key="page_content")
        assert report.status == "verified"
        merged = verify_merged(
            "memory://merged-src", "memory://merged-dst", segments=3, text_key="page_content"
        )
        assert merged.status == "verified" and merged.differing_bins == 0 and merged.compared == n
        assert len(merged.per_worker) == 6  # 3 segments of each store

        # without the migration's text_key every record's text and metadata differ
        plain = verify_merged("memory://merged-src", "memory://merged-dst", segments=2, sample_queries=0)
        assert plain.text.total == plain.metadata.total == n and plain.differing_bins == plain.key_bins

        target = vectorport.connect("memory://merged-dst")
        gone, changed, moved = records[7], records[1_500], records[2_000]
        target.delete([gone.key])
        got = target.get([changed.key])[0]
        target.upsert([Record(changed.key, got.vector, {**got.metadata, "count": -1}, got.text)])
        got = target.get([moved.key])[0]
        target.upsert([Record(moved.key, [v + 0.5 for v in got.vector], got.metadata, "other text")])
        target.upsert([Record("extra#1", got.vector, {}, None)])
        one = vectorport.verify("memory://merged-src", "memory://merged-dst", text_key="page_content")
        merged = verify_merged(
            "memory://merged-src", "memory://merged-dst", segments=2, text_key="page_content"
        )
        assert _lists(merged) == _lists(one)
        assert merged.missing.items == [gone.key] and merged.extra.items == ["extra#1"]
        assert [m["key"] for m in merged.metadata.items] == [changed.key]
        assert (
            [m["key"] for m in merged.vectors.items] == [m["key"] for m in merged.text.items] == [moved.key]
        )
        assert merged.queries is not None and one.queries is not None
        assert merged.queries.target_recall == one.queries.target_recall
        assert merged.to_dict()["engine"] == "local"
    finally:
        source.drop()
        vectorport.connect("memory://merged-dst").drop()


@pytest.mark.s3vectors
def test_a_bucket_verified_here_is_counted_by_the_digest_read_as_under_tasks(url_for: Any) -> None:
    """A bucket has no count of its own: the one verification counts it by the read it makes
    anyway (here and in tasks alike), into the most key bins; its findings are the tasks'."""
    source = url_for("s3vectors")
    n = 300
    records = [Record(f"doc-{i}", [float((i * 7 + j) % 11) + 1.0 for j in range(DIM)], {"i": i}, f"t{i}")
               for i in range(n)]  # fmt: skip
    vectorport.connect(source, dimension=DIM).upsert(records)
    target = "memory://bucket-counted"
    try:
        assert vectorport.migrate.run(source, target).status == "verified"
        dst = vectorport.connect(target)
        dst.delete([records[3].key])
        dst.upsert([Record("extra#1", records[5].vector, {}, None)])
        here = vectorport.verify(source, target, sample_queries=4)
        tasks = verify_merged(source, target, segments=2, sample_queries=4)
        assert (here.method, here.source_count, here.target_count) == ("digest", n, n)
        assert here.bins is not None and here.bins["parts"] == MAX_BINS == tasks.key_bins
        assert _lists(here) == _lists(tasks)
        assert here.missing.items == [records[3].key] and here.extra.items == ["extra#1"]
    finally:
        vectorport.connect(target).drop()
