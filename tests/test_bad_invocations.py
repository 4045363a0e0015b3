"""Bad invocations and environments end in one ``error:`` line and the documented exit code, never
a traceback: malformed hosts and ``endpoint_url=``, output paths that cannot be written (checked
before any work, so nothing is copied or created), a snapshot part whose metadata is not JSON.
A password inside ``endpoint_url=`` is never printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner, Result

import vectorport
from vectorport._exit import ExitCode
from vectorport.cli import app

SRC = "memory://bad-invocations-src"


@pytest.fixture
def source() -> Iterator[str]:
    store = vectorport.connect(SRC, dimension=3)
    store.upsert([vectorport.Record(f"k{i}", np.ones(3) * (i + 1), {"i": i}, f"t{i}") for i in range(20)])
    yield SRC
    store.drop()


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _one_error(out: Result, code: int, *needles: str) -> str:
    """The run exited ``code`` with exactly one ``error:`` line holding every needle, and no traceback."""
    assert out.exit_code == code, out.output
    assert isinstance(out.exception, SystemExit), out.exception
    assert "Traceback" not in out.output
    errors = [line for line in out.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.mark.memory
@pytest.mark.parametrize(
    "url",
    ["postgresql://u@[zz::1]/db?table=t", "chroma+http://[::1/docs", "memory://[::1"],
)
def test_invalid_ipv6_host(url: str) -> None:
    _one_error(_run("info", url), ExitCode.USAGE, "bad host")
    with pytest.raises(vectorport.ConfigurationError, match="bad host"):
        vectorport.connect(url)


@pytest.mark.s3vectors
@pytest.mark.parametrize(
    ("endpoint", "needle"),
    [
        ("http://[::1", "is not a URL"),
        ("notaurl", "not an http:// or https:// URL"),
        ("ftp://host", "not an http:// or https:// URL"),
        ("http://127.0.0.1:99999", "is not a URL"),
        ("http://user:SECRET@127.0.0.1:1", "holds a user name or password"),
    ],
)
def test_malformed_endpoint_url(endpoint: str, needle: str) -> None:
    url = f"s3vectors://bucket-x/index-x?endpoint_url={endpoint}"
    line = _one_error(_run("info", url), ExitCode.USAGE, needle)
    assert "SECRET" not in line
    with pytest.raises(vectorport.ConfigurationError, match=needle) as caught:
        vectorport.connect(url)
    assert "SECRET" not in str(caught.value)


@pytest.mark.memory
def test_secret_inside_a_url_parameter_is_masked() -> None:
    from vectorport._url import mask_url

    shown = mask_url("s3vectors://b/i?endpoint_url=http://user:SECRET@host:9000&region=x")
    assert "SECRET" not in shown and "user:***@host:9000" in shown
    assert "SECRET" not in mask_url("postgresql://u:SECRET@[zz::1]/db")


@pytest.mark.memory
@pytest.mark.parametrize("command", ["migrate", "verify", "sync"])
def test_unwritable_report_is_refused_before_any_work(source: str, command: str) -> None:
    target = f"memory://bad-invocations-{command}"
    out = _run(command, source, target, "--report", "/proc/nope/report.json")
    _one_error(out, ExitCode.USAGE, "cannot write the report /proc/nope/report.json")
    assert target.split("://")[1] not in vectorport.connect(SRC).list_collections()
    out = _run(command, source, target, "--report", "/")
    _one_error(out, ExitCode.USAGE, "is a directory")


@pytest.mark.memory
def test_unwritable_checkpoint_and_state_are_refused_before_any_write(source: str) -> None:
    target = "memory://bad-invocations-ck"
    out = _run("migrate", source, target, "--checkpoint", "/proc/nope/ck.json")
    _one_error(out, ExitCode.USAGE, "cannot write the checkpoint /proc/nope/ck.json")
    out = _run("sync", source, target, "--state", "/proc/nope/state.db")
    _one_error(out, ExitCode.USAGE, "cannot write the sync state /proc/nope/state.db")
    assert "bad-invocations-ck" not in vectorport.connect(SRC).list_collections()


@pytest.mark.memory
@pytest.mark.parquet
def test_unwritable_export_directory_and_report(source: str, tmp_path: Path) -> None:
    _one_error(
        _run("export", source, "/proc/nope/snap"), ExitCode.USAGE, "snapshot directory /proc/nope/snap"
    )
    (tmp_path / "file").write_text("x")
    _one_error(_run("export", source, str(tmp_path / "file" / "snap")), ExitCode.USAGE, "Not a directory")
    out = _run("export", source, str(tmp_path / "snap"), "--report", "/proc/nope/r.json")
    _one_error(out, ExitCode.USAGE, "cannot write the report")
    assert not (tmp_path / "snap").exists()


@pytest.mark.memory
@pytest.mark.parquet
def test_part_with_invalid_json_metadata(source: str, tmp_path: Path) -> None:
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "snap"
    assert _run("export", source, str(folder)).exit_code == 0
    manifest = json.loads((folder / "_manifest.json").read_text())
    part = manifest["parts"][0]
    path = folder / part["file"]
    table = pq.read_table(path)
    metas = table.column("metadata").to_pylist()
    metas[3] = "{not json"
    pq.write_table(table.set_column(2, "metadata", pa.array(metas, pa.string())), path)
    data = path.read_bytes()
    part["sha256"], part["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    key = table.column("key").to_pylist()[3]
    out = _run("import", str(folder), "memory://bad-invocations-import")
    _one_error(out, ExitCode.USAGE, f"record {key!r} at metadata is not valid JSON")
    assert "bad-invocations-import" not in vectorport.connect(SRC).list_collections()
