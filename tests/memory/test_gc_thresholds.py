"""A copy and a verification run with the cyclic collector's thresholds raised (far fewer
collections over the many short-lived containers they make), and put back afterwards: nested
and concurrent jobs share one raise, an application's own settings are kept."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import vectorport
from vectorport._gc import BULK_THRESHOLDS, bulk_allocations
from vectorport.testing import clustered_records

pytestmark = pytest.mark.memory


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults, whatever the session set
    yield
    gc.set_threshold(*saved)


def test_raised_for_the_block_and_put_back() -> None:
    with bulk_allocations():
        assert gc.get_threshold() == BULK_THRESHOLDS
        with bulk_allocations():  # nested: one raise
            assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_threshold() == BULK_THRESHOLDS  # the outer job still runs
    assert gc.get_threshold() == (700, 10, 10)


def test_put_back_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), bulk_allocations():
        raise RuntimeError("a failed copy")
    assert gc.get_threshold() == (700, 10, 10)


def test_concurrent_jobs_put_back_once_the_last_ends() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[int, ...]] = []

    def first() -> None:
        with bulk_allocations():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with bulk_allocations():
        second_in.set()
        first_out.wait(10)  # the job that raised them ended: this one still needs them
        seen.append(gc.get_threshold())
    thread.join()
    assert seen == [BULK_THRESHOLDS]
    assert gc.get_threshold() == (700, 10, 10)


def test_an_application_s_settings_are_kept() -> None:
    gc.set_threshold(200_000, 5, 500)  # higher first threshold: kept, the rest raised
    with bulk_allocations():
        assert gc.get_threshold() == (200_000, 20, 500)
    assert gc.get_threshold() == (200_000, 5, 500)
    gc.set_threshold(0, 10, 10)  # a collector switched off stays off
    with bulk_allocations():
        assert gc.get_threshold() == (0, 10, 10)
    gc.set_threshold(700, 10, 10)
    with bulk_allocations():
        gc.set_threshold(5_000, 10, 10)  # changed during the job: not overwritten after it
    assert gc.get_threshold() == (5_000, 10, 10)


def test_a_migration_copies_and_verifies_with_few_collections() -> None:
    records = clustered_records(6_000, 8, seed=5)
    src = vectorport.connect("memory://gc-src", dimension=8)
    src.upsert(records)
    collections: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(int(info["generation"]))

    gc.callbacks.append(count)
    try:
        report = vectorport.migrate.run(src, "memory://gc-dst")
    finally:
        gc.callbacks.remove(count)
    assert report.status == "verified", report.to_json()
    # 6,000 records make tens of thousands of containers (records, metadata, lists, pages):
    # at the default 700 that starts 140 collections (measured), with the raise 2
    assert len(collections) < 25, collections
    assert gc.get_threshold() == (700, 10, 10)
