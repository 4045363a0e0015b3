"""``vectorport diff``: the keys that differ, from the one verification's digests, through the
library, the CLI and (by URL) a real backend pair."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.diff import diff
from vectorport.testing import clustered_records


def _records() -> list[vectorport.Record]:
    """Records every backend holds as they are (flat metadata)."""
    return [
        vectorport.Record(r.key, r.vector, {"i": i, "lang": "en" if i % 2 else "fr"}, r.text)
        for i, r in enumerate(clustered_records(300, 8, seed=3))
    ]


def _pair(src_url: str, dst_url: str) -> tuple[vectorport.VectorStore, vectorport.VectorStore]:
    src = vectorport.connect(src_url, dimension=8)
    dst = vectorport.connect(dst_url, dimension=8)
    records = _records()
    src.upsert(records)
    dst.upsert(records[:290])  # 10 missing
    dst.upsert([vectorport.Record("extra#1", records[0].vector, {}, "x")])
    changed = records[5]
    dst.upsert(
        [vectorport.Record(changed.key, changed.vector, {**changed.metadata, "edited": True}, changed.text)]
    )
    return src, dst


@pytest.mark.memory
def test_lists_missing_extra_and_changed_keys() -> None:
    src, dst = _pair("memory://diff-a", "memory://diff-b")
    try:
        report = diff("memory://diff-a", "memory://diff-b")
        records = _records()
        assert sorted(report.missing) == sorted(r.key for r in records[290:])
        assert list(report.extra) == ["extra#1"]
        assert list(report.changed) == [records[5].key]
        assert report.exit_code == 1 and report.to_dict()["schema"] == "vectorport.diff/1"
        dst.upsert(records[290:])
        dst.delete(["extra#1"])
        dst.upsert([records[5]])
        assert diff("memory://diff-a", "memory://diff-b").exit_code == 0
    finally:
        src.drop()
        dst.drop()


@pytest.mark.memory
def test_limit_cuts_the_lists_not_the_totals() -> None:
    src, dst = _pair("memory://diff-c", "memory://diff-d")
    try:
        report = diff("memory://diff-c", "memory://diff-d", limit=3)
        assert len(report.missing.items) == 3 and report.missing.total == 10
    finally:
        src.drop()
        dst.drop()


@pytest.mark.memory
def test_cli_prints_one_key_per_line_and_exits_1() -> None:
    src, dst = _pair("memory://diff-e", "memory://diff-f")
    try:
        res = CliRunner().invoke(app, ["diff", "memory://diff-e", "memory://diff-f"])
        assert res.exit_code == 1, res.output
        lines = res.stdout.splitlines()
        assert "+ extra#1" in lines and sum(line.startswith("- ") for line in lines) == 10
        assert lines[-1].startswith("differences: 10 missing, 1 extra, 1 changed")
        doc = json.loads(
            CliRunner().invoke(app, ["diff", "memory://diff-e", "memory://diff-f", "--json"]).stdout
        )
        assert doc["missing"]["total"] == 10 and doc["extra"]["items"] == ["extra#1"]
    finally:
        src.drop()
        dst.drop()


@pytest.mark.pgvector
@pytest.mark.chroma
def test_a_real_pair_read_back(url_for: Callable[..., str]) -> None:
    a, b = url_for("pgvector"), url_for("chroma")
    src, dst = _pair(a, b)
    try:
        report = diff(a, b)
        assert (report.missing.total, report.extra.total, report.changed.total) == (10, 1, 1)
    finally:
        for store in (src, dst):
            store.drop()
            store.close()
