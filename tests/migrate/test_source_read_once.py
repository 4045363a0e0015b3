"""A default migration reads the source's records once: the copy's scan. The verification's
sampled queries are picked from the first page the copy read instead of a second read of it,
and they are the queries a read of the source picks."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

import vectorport
from vectorport import StoreURL
from vectorport._models import ScanPage
from vectorport.backends.memory import MemoryStore
from vectorport.testing import clustered_records
from vectorport.verify._queries import pick_queries

pytestmark = pytest.mark.memory

_names = itertools.count()


class ScanLog(MemoryStore):
    """A memory store that notes every scan it starts (what it includes, from where)."""

    scans: list[tuple[tuple[str, ...], str | None]]

    def scan(self, *args: Any, **kwargs: Any) -> Iterator[ScanPage]:
        self.scans.append((tuple(kwargs.get("include") or ()), kwargs.get("cursor")))
        return super().scan(*args, **kwargs)


def _source(n: int) -> ScanLog:
    name = f"read-once-{next(_names)}"
    with vectorport.connect(f"memory://{name}", dimension=8, metric="cosine") as s:
        s.upsert(clustered_records(n, 8, seed=3))
    store = ScanLog.from_url(StoreURL.parse(f"memory://{name}"))
    store.bind()
    store.scans = []
    return store


@pytest.mark.parametrize("n", [300, 2500])
def test_a_migration_reads_the_sources_records_once(n: int) -> None:
    source = _source(n)
    target = f"{source.url}-copy"
    try:
        report = vectorport.migrate.run(source, target)
        assert report.status == "verified", report.to_json()
        v = report.verification
        assert v is not None and v.method == "digest" and v.queries is not None
        assert v.queries.queries == 20 and v.queries.ok
        with_vectors = [s for s in source.scans if "vector" in s[0]]
        assert with_vectors == [(("vector", "metadata", "text"), None)], source.scans  # the copy's
    finally:
        source.drop()
        vectorport.connect(target).drop()


@pytest.mark.parametrize(("n", "page"), [(2500, 1800), (2500, 1000), (300, 300), (2500, 500)])
def test_queries_from_a_first_page_are_those_a_read_of_the_source_picks(n: int, page: int) -> None:
    source = _source(n)
    try:
        first = next(iter(source.scan(batch_size=page, include=["vector", "metadata", "text"])))
        source.scans.clear()
        given = [r.key for r in pick_queries(source, (0, 1), 20, first)]
        # a page holding the first 1,000 records (or the whole source) is enough; a shorter
        # one is not, and the source is read
        assert len(source.scans) == (1 if page < min(n, 1000) else 0)
        read = [r.key for r in pick_queries(source, (0, 1), 20)]
        assert given == read and len(read) == 20
    finally:
        source.drop()
