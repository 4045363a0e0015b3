"""One option matrix: every ``migrate``, ``sync`` and ``export`` option under both runners (threads in
this process, Ray tasks under the ``ray`` marker) on the same small data gives the same target
contents (read back with boto3, or the snapshot with pyarrow, not vectorport), the same report
apart from timings and placement, and the same exit code; an option a runner cannot honour is
refused by it before anything is read or written. Every field of the commands' options has an
entry (:func:`test_every_option_has_a_matrix_entry`): a new option cannot be left out."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import typer
from typer.testing import CliRunner

import vectorport
from vectorport._retry import RetryPolicy
from vectorport.cli import app
from vectorport.migrate import MigrateOptions, SyncOptions
from vectorport.snapshot import ExportOptions

from ..migrate._migrate_data import DIM, fit_to, tricky_records
from ..migrate._raw import raw_metadata

pytestmark = [pytest.mark.ray, pytest.mark.s3vectors, pytest.mark.parquet]

N = 300
CASES: dict[str, list[str]] = {
    "default": [],
    "plan": ["--plan"],
    "batch-size": ["--batch-size", "7"],
    "concurrency": ["--concurrency", "1"],
    "no-verify": ["--no-verify"],
    "two-pass": ["--two-pass"],
    "single-pass": ["--single-pass"],
    "flatten": ["--metadata-policy", "flatten"],
    "stringify": ["--metadata-policy", "stringify"],
    "drop": ["--metadata-policy", "drop"],
    "text-key": ["--text-key", "title", "--metadata-policy", "drop"],
    "queries": ["--queries", "0"],
    "k": ["-k", "3"],
    "reembed": ["--reembed", f"hash:{DIM}", "--text-key", "title"],
    "progress": ["--progress"],
    "shard": ["--shard", "0/2"],
    "resume": ["--resume"],
}
BEFORE = {"resume": ["--no-verify"]}
"""Cases that continue an earlier run over the same checkpoint and target: its flags."""
REFUSED_BY = {"ray": {"shard", "single-pass"}}
"""Options a runner refuses (before any I/O, naming the option and the runner)."""
TWO_PASS_EVERYWHERE = {"plan", "two-pass", "reembed"}
"""Cases whose plan reads the source first under every runner (the rest: in one pass locally)."""

VOLATILE = {"timings", "seconds", "checkpoint", "records_per_second", "engine", "workers", "per_worker"}
VOLATILE |= {"write_rate_per_worker", "index_seconds", "method", "segments", "read_back", "scan_segments"}
VOLATILE |= {"key_bins", "differing_bins", "batches", "concurrency", "target_scanned", "skipped"}
VOLATILE |= {"target", "name"}  # each run writes its own index


def _stable(doc: Any, drop: set[str] = VOLATILE) -> Any:
    """A report without what differs by placement or time alone."""
    if isinstance(doc, dict):
        return {k: _stable(v, drop) for k, v in doc.items() if k not in drop}
    if isinstance(doc, list):
        return [_stable(v, drop) for v in doc]
    return doc


@pytest.fixture
def source(tmp_path: Path, url_for: Callable[..., str]) -> str:
    """A parquet:// snapshot every runner's processes can read, with metadata a bucket takes."""
    from vectorport.snapshot import export, snapshot_url

    probe = vectorport.connect(url_for("s3vectors"), dimension=DIM)
    rules = probe.capabilities.metadata
    probe.drop()
    name = f"matrix-{tmp_path.name}"
    store = vectorport.connect(f"memory://{name}", dimension=DIM)
    records = fit_to(tricky_records(N, DIM), rules)
    store.upsert(
        [
            vectorport.Record(r.key, r.vector, {**r.metadata, "title": f"t{i}"}, r.text)
            for i, r in enumerate(records)
        ]
    )
    export(f"memory://{name}", tmp_path / "snap", verify=False)
    store.drop()
    return snapshot_url(tmp_path / "snap")


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys()) for d in _diff(a.get(k), b.get(k), f"{path}.{k}")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def _run(engine: str, source: str, target: str, flags: list[str], tmp: Path) -> tuple[int, dict[str, Any]]:
    args = ["migrate", source, target, "--engine", engine, "--checkpoint", str(tmp / f"{engine}.json")]
    out = CliRunner().invoke(app, [*args, *flags, "--json"], catch_exceptions=False)
    return out.exit_code, json.loads(out.stdout) if out.stdout.strip() else {}


def _contents(url: str) -> dict[str, Any] | None:
    try:
        return raw_metadata(url)
    except Exception:  # no index: nothing was written
        return None


@pytest.mark.parametrize("case", list(CASES))
def test_an_option_means_the_same_under_every_runner(
    case: str, source: str, ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    flags = CASES[case]
    reference, target = url_for("s3vectors", write_rate=0), url_for("s3vectors", write_rate=0)
    for engine, url in (("local", reference), ("ray", target)):
        if case in BEFORE:
            assert _run(engine, source, url, BEFORE[case], tmp_path)[0] == 0
    code, report = _run("local", source, reference, flags, tmp_path)
    assert code == 0, report
    got_code, got = _run("ray", source, target, flags, tmp_path)
    if case in REFUSED_BY["ray"]:
        assert got_code == 2 and got.get("kind") == "ConfigurationError", got
        assert case.replace("-", "_") in got["error"] and "ray" in got["error"]
        assert _contents(target) is None  # refused before anything was written
        return
    assert got_code == code, (got, report)
    # the one difference a runner makes to how a run reads, said in its report: Ray's shards
    # cannot share the single pass's checks, so its plan reads the source first
    said = [n for n in got.get("notes", []) if n.startswith("single pass not used (the ray runner")]
    planned = case not in TWO_PASS_EVERYWHERE and report.get("plan") is not None
    assert len(said) == (1 if planned else 0), got.get("notes")
    got["notes"] = [n for n in got.get("notes", []) if n not in said]
    a, b = _stable(got), _stable(report)
    assert a == b, _diff(a, b)
    assert _contents(target) == _contents(reference)


SYNC_CASES: dict[str, list[str]] = {
    "default": [],
    "delete": ["--delete"],
    "full": ["--full"],
    "verify": ["--verify", "--queries", "3"],
    "k": ["--verify", "--queries", "3", "-k", "3"],
    "batch-size": ["--batch-size", "7"],
    "concurrency": ["--concurrency", "1"],
    "flatten": ["--metadata-policy", "flatten"],
    "text-key": ["--text-key", "title"],
    "progress": ["--progress"],
    "until-equal": ["--until-equal", "--queries", "3"],
    "shard": ["--shard", "0/2"],
    "follow": ["--follow"],
    "max-outage": ["--max-outage", "5"],
    "reembed": ["--reembed", f"hash:{DIM}", "--text-key", "title"],
}
SYNC_REFUSED_BY = {"ray": {"shard", "follow", "max-outage"}}
SYNC_VOLATILE = {"state", "shards", "target_read", "source_read", "bins", "bins_read", "bins_checked"}


def _sync(engine: str, source: str, target: str, flags: list[str], tmp: Path) -> tuple[int, dict[str, Any]]:
    args = ["sync", source, target, "--engine", engine, "--state", str(tmp / f"{engine}.sqlite")]
    out = CliRunner().invoke(app, [*args, *flags, "--json"], catch_exceptions=False)
    return out.exit_code, json.loads(out.stdout) if out.stdout.strip() else {}


@pytest.mark.parametrize("case", list(SYNC_CASES))
def test_a_sync_option_means_the_same_under_every_runner(
    case: str, source: str, ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    flags = SYNC_CASES[case]
    target = url_for("s3vectors", write_rate=0)
    if case in SYNC_REFUSED_BY["ray"]:
        got_code, got = _sync("ray", source, target, flags, tmp_path)
        assert got_code == 2 and got.get("kind") == "ConfigurationError", got
        assert case.replace("-", "_") in got["error"] and "ray" in got["error"]
        assert _contents(target) is None  # refused before anything was written
        return
    reference = url_for("s3vectors", write_rate=0)
    code, report = _sync("local", source, reference, flags, tmp_path)
    assert code == 0, report
    got_code, got = _sync("ray", source, target, flags, tmp_path)
    assert got_code == code, (got, report)
    drop = VOLATILE | SYNC_VOLATILE
    a, b = _stable(got, drop), _stable(report, drop)
    assert a == b, _diff(a, b)
    assert _contents(target) == _contents(reference)


EXPECT_DIGEST = "the source snapshot's own digest"
"""Stands for the ``expect_digest`` of the source snapshot in a case's ``source_options``."""
EXPORT_CASES: dict[str, dict[str, Any]] = {
    "max_part_bytes": {"max_part_bytes": 20_000},
    "batch_size": {"batch_size": 7},
    "segments": {"segments": 3},
    "overwrite": {"overwrite": True},
    "verify": {"verify": False},
    "sample_queries": {"sample_queries": 0},
    "k": {"k": 3},
    "progress": {"progress": "json"},
    "cap": {"cap": 1},
    "source_options": {"source_options": {"expect_digest": EXPECT_DIGEST}},
}
"""Each field of :class:`~vectorport.snapshot.ExportOptions` (keyed by its name, so a new field
without an entry fails the matrix) set away from its default."""
EXPORT_REFUSED_BY: dict[str, set[str]] = {"ray": set()}
EXPORT_VOLATILE = {"directory", "url", "snapshot_digest"}
SAME_SPLIT = {"segments": 2}
"""Given to both runners in every case but the default: the same scan segments (one per
worker under Ray), so the parts must be the same, byte for byte."""


def _export(engine: str, source: str, directory: Path, options: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The export under ``engine`` (the library's call: three of its options have no flag); its
    exit code and report, or the refusal's code and message."""
    from vectorport.migrate import LocalRunner
    from vectorport.snapshot import export

    if options.get("overwrite"):  # a snapshot to replace
        export(source, directory, verify=False)
    runner: Any = LocalRunner()
    if engine == "ray":
        from vectorport.ray import RayRunner

        runner = RayRunner(2)
    try:
        report = export(source, directory, runner=runner, **options)
    except vectorport.ConfigurationError as exc:
        return 2, {"kind": type(exc).__name__, "error": str(exc)}
    return int(report.exit_code), report.to_dict()


def _snapshot(directory: Path, drop: set[str]) -> tuple[list[tuple[Any, ...]], dict[str, Any]] | None:
    """A snapshot's rows read with pyarrow (sorted by key) and its manifest without its time
    and ``drop``."""
    import pyarrow.parquet as pq

    manifest_file = directory / "_manifest.json"
    if not manifest_file.exists():
        return None
    manifest = json.loads(manifest_file.read_text())
    table = pq.read_table(sorted(str(p) for p in directory.glob("*.parquet")))
    rows = sorted(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))
    return rows, _stable(manifest, {"created", *drop})


@pytest.mark.parametrize("option", ["default", *(f.name for f in dataclasses.fields(ExportOptions))])
def test_an_export_option_means_the_same_under_every_runner(
    option: str, source: str, ray_cluster: Any, tmp_path: Path
) -> None:
    """Parametrized from the declaration: every option either gives the same snapshot (rows
    read with pyarrow, manifest, content digest) and report under both runners, or is refused
    by a runner before anything is read or written, naming the option and the runner."""
    assert option in {"default", *EXPORT_CASES}, f"ExportOptions.{option} has no entry in the export matrix"
    options = _expected(source, {} if option == "default" else SAME_SPLIT | EXPORT_CASES[option])
    code, report = _export("local", source, tmp_path / "local", options)
    assert code == 0, report
    got_code, got = _export("ray", source, tmp_path / "ray", options)
    if option in EXPORT_REFUSED_BY["ray"]:
        assert got_code == 2 and got["kind"] == "ConfigurationError", got
        assert option in got["error"] and "ray" in got["error"]
        assert not (tmp_path / "ray").exists()
        return
    assert got_code == code, (got, report)
    assert got["digest"] == report["digest"] and got["count"] == report["count"] == N
    # the default splits by runner (one segment in one process, one per worker under Ray)
    split = {"parts", "bytes", "segments"} if option == "default" else set()
    drop = VOLATILE | EXPORT_VOLATILE | split
    a, b = _stable(got, drop), _stable(report, drop)
    assert a == b, _diff(a, b)
    assert _snapshot(tmp_path / "ray", split) == _snapshot(tmp_path / "local", split) is not None


PY_CASES: dict[str, dict[str, dict[str, Any]]] = {
    command: {
        "cap": {"cap": 1},
        "retry": {"retry": RetryPolicy(attempts=3, base=0.05)},
        "source_options": {"source_options": {"expect_digest": EXPECT_DIGEST}},
        "target_options": {"target_options": {"max_attempts": 3}},
    }
    for command in ("migrate", "sync")
}
PY_CASES["sync"]["poll"] = {"poll": 0.1, "until_equal": True, "sample_queries": 3}
"""The options only Python passes (no flag), per command, set away from their default."""


def _expected(source: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with :data:`EXPECT_DIGEST` replaced by the source snapshot's digest."""
    digest = hashlib.sha256(
        (Path(unquote(urlsplit(source).path)) / "_manifest.json").read_bytes()
    ).hexdigest()
    if options.get("source_options") == {"expect_digest": EXPECT_DIGEST}:
        return {**options, "source_options": {"expect_digest": f"sha256:{digest}"}}
    return options


def _library(command: str, engine: str, source: str, target: str, options: dict[str, Any], tmp: Path) -> Any:
    """The library's call of ``command`` under ``engine`` (its own checkpoint or state file)."""
    from vectorport.migrate import LocalRunner

    runner: Any = LocalRunner()
    if engine == "ray":
        from vectorport.ray import RayRunner

        runner = RayRunner(2)
    if command == "migrate":
        return vectorport.migrate.run(
            source, target, runner=runner, checkpoint=tmp / f"{engine}.json", **options
        )
    return vectorport.sync(source, target, runner=runner, state=tmp / f"{engine}.sqlite", **options)


@pytest.mark.parametrize(("command", "option"), [(c, o) for c, cases in PY_CASES.items() for o in cases])
def test_a_python_only_option_means_the_same_under_every_runner(
    command: str, option: str, source: str, ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    options = _expected(source, PY_CASES[command][option])
    reference, target = url_for("s3vectors", write_rate=0), url_for("s3vectors", write_rate=0)
    report = _library(command, "local", source, reference, options, tmp_path).to_dict()
    got = _library(command, "ray", source, target, options, tmp_path).to_dict()
    assert report["exit_code"] == got["exit_code"] == 0, (got, report)
    notes = [n for n in got.get("notes", []) if not n.startswith("single pass not used (the ray runner")]
    drop = VOLATILE | SYNC_VOLATILE | {"notes"}
    a, b = _stable(got, drop), _stable(report, drop)
    assert a == b and notes == report.get("notes", []), _diff(a, b)
    assert _contents(target) == _contents(reference) is not None


@pytest.mark.parametrize("command", ["migrate", "sync", "export"])
def test_every_option_has_a_matrix_entry(command: str) -> None:
    """A field added to a command's options fails here until the matrix runs it under both
    runners: through its flag in the command's cases, or as a Python-only case."""
    cls, cases, own = {
        "migrate": (MigrateOptions, CASES, {"checkpoint"}),
        "sync": (SyncOptions, SYNC_CASES, {"state"}),
        "export": (ExportOptions, {}, set(EXPORT_CASES)),
    }[command]
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    field_of = {flag: p.name for p in params for flag in (*p.opts, *p.secondary_opts)}
    flagged = {field_of[arg] for flags in cases.values() for arg in flags if arg in field_of}
    covered = own | flagged | set(PY_CASES.get(command, {}))
    missing = sorted({f.name for f in dataclasses.fields(cls)} - covered)
    assert not missing, f"{cls.__name__} fields with no entry in the {command} option matrix: {missing}"
