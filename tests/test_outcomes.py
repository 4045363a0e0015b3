"""One outcome vocabulary: every report's status maps to its exit code through one table, and
every report's JSON names its schema."""

from __future__ import annotations

import json
import re

import pytest

import vectorport
from vectorport._exit import EXIT_CODES, ExitCode, Status
from vectorport._report import Report
from vectorport.ingest.doctor import DoctorReport
from vectorport.ingest.indexer import IngestReport
from vectorport.migrate import MigrationReport, SyncReport, VerifyReport
from vectorport.snapshot import ExportReport

pytestmark = pytest.mark.memory

REPORTS = [MigrationReport, SyncReport, VerifyReport, ExportReport, DoctorReport, IngestReport]


def test_every_status_has_one_exit_code() -> None:
    assert set(EXIT_CODES) == set(Status)
    assert {Status.REFUSED.exit_code, Status.QUALITY.exit_code} == {ExitCode.REFUSED, ExitCode.QUALITY}
    assert Status.DIFFERENCES.exit_code is ExitCode.PROBLEM


@pytest.mark.parametrize("cls", REPORTS, ids=lambda c: c.__name__)
def test_reports_share_the_base_and_name_a_schema(cls: type[Report]) -> None:
    assert issubclass(cls, Report)
    assert re.fullmatch(r"vectorport\.[a-z-]+/\d+", cls.SCHEMA)
    assert "exit_code" not in cls.__dict__  # the one table decides


def test_report_json_carries_schema_status_and_exit_code() -> None:
    src = vectorport.connect("memory://outcomes-src", dimension=2)
    try:
        src.upsert([vectorport.Record(f"k{i}", [1.0, float(i)], {"i": i}, "t") for i in range(3)])
        report = vectorport.migrate.run("memory://outcomes-src", "memory://outcomes-dst")
        data = json.loads(report.to_json())
        assert data["schema"] == "vectorport.migrate/1"
        assert (data["status"], data["exit_code"]) == ("verified", 0)
        assert data["verification"]["schema"] == "vectorport.verify/1"
        assert report.status is Status.VERIFIED and report.ok
    finally:
        src.drop()
        vectorport.connect("memory://outcomes-dst").drop()


def test_a_refused_report_exits_4() -> None:
    report = MigrationReport("a", "b", (0, 1), Status.REFUSED)
    assert report.exit_code is ExitCode.REFUSED and not report.ok
    assert report.to_dict()["exit_code"] == 4
