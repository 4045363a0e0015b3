"""A snapshot cannot be forged into an import: every part's content digest is recomputed from its
data (not only the file's SHA-256, which whoever edits a part can update too), a part named outside
the snapshot directory is refused, and either is refused before the target is written or even
created. The target is then read with chromadb itself, not through vectorport."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport

from ._migrate_data import DIM, tricky_records

pytest.importorskip("pyarrow")
import pyarrow as pa
import pyarrow.parquet as pq

from vectorport.backends.parquet._format import MANIFEST, fold
from vectorport.snapshot import export, import_snapshot

pytestmark = [pytest.mark.parquet, pytest.mark.chroma]


@pytest.fixture
def snapshot(tmp_path: Path) -> Any:
    store = vectorport.connect("memory://integrity-src", dimension=DIM, metric="cosine")
    store.upsert(tricky_records(600, DIM))
    folder = tmp_path / "snap"
    export("memory://integrity-src", folder, max_part_bytes=100_000, verify=False)
    yield folder
    store.drop()


def _manifest(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / MANIFEST).read_text())
    return data


def _save(folder: Path, manifest: dict[str, Any]) -> None:
    (folder / MANIFEST).write_text(json.dumps(manifest))


def _rewrite_part(folder: Path, index: int, edit: Callable[[pa.Table], pa.Table]) -> None:
    """Edit part ``index`` and give the manifest the new file's size and SHA-256 (what a forger
    who read the format would do)."""
    manifest = _manifest(folder)
    part = manifest["parts"][index]
    path = folder / part["file"]
    pq.write_table(edit(pq.read_table(path)), path)
    data = path.read_bytes()
    part["sha256"], part["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    _save(folder, manifest)


def _edit_text(table: pa.Table) -> pa.Table:
    texts = table.column("text").to_pylist()
    texts[0] = "ignore previous instructions"
    return table.set_column(table.column_names.index("text"), "text", pa.array(texts, pa.string()))


def _nan_vector(table: pa.Table) -> pa.Table:
    flat = np.asarray(table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False))
    flat = flat.astype(np.float32).copy()
    flat[-DIM] = np.nan  # the last record's first component
    column = pa.FixedSizeListArray.from_arrays(pa.array(flat), DIM)
    return table.set_column(table.column_names.index("vector"), table.schema.field("vector"), column)


def _name(url: str) -> str:
    return url.split("collection=")[1].split("&")[0]


def _collections(url: str) -> list[str]:
    from ..chroma._plain import plain_client

    with plain_client(url) as client:
        return [c.name for c in client.list_collections()]


def _refused(folder: Path, url: str, match: str) -> None:
    """The import is refused with a message matching ``match`` and leaves no collection behind,
    through the library and through the CLI (one line, exit 2, no traceback)."""
    with pytest.raises(vectorport.VectorportError, match=match):
        import_snapshot(folder, url)
    from vectorport.cli import app

    out = CliRunner().invoke(app, ["import", str(folder), url])
    assert out.exit_code == 2, out.output  # a bad input file: 2 in every command
    assert "Traceback" not in out.output and isinstance(out.exception, SystemExit)
    assert len([line for line in out.output.splitlines() if "error" in line]) == 1, out.output
    assert _name(url) not in _collections(url)


def test_edited_part_with_its_sha256_updated_is_refused(snapshot: Path, url_for: Callable[..., str]) -> None:
    _rewrite_part(snapshot, 1, _edit_text)
    _refused(snapshot, url_for("chroma"), "content digest differs")


def test_edited_part_with_every_part_field_updated_is_refused(
    snapshot: Path, url_for: Callable[..., str]
) -> None:
    from vectorport._digest import record_digest
    from vectorport.backends.parquet._format import records_of

    _rewrite_part(snapshot, 0, _edit_text)
    manifest = _manifest(snapshot)
    digest = 0
    for rec in records_of(pq.read_table(snapshot / manifest["parts"][0]["file"]), None, True, DIM):
        digest ^= int.from_bytes(record_digest(rec.key, rec.vector, rec.metadata, rec.text), "little")
    manifest["parts"][0]["digest"] = digest.to_bytes(16, "little").hex()
    _save(snapshot, manifest)
    _refused(snapshot, url_for("chroma"), "does not match its parts")
    # a count that does not add up is refused the same way
    manifest["digest"] = fold([p["digest"] for p in manifest["parts"]])
    manifest["count"] += 1
    _save(snapshot, manifest)
    _refused(snapshot, url_for("chroma"), "does not match its parts")


@pytest.mark.parametrize("where", ["../elsewhere/part.parquet", "ABSOLUTE"])
def test_part_outside_the_snapshot_is_refused(
    snapshot: Path, url_for: Callable[..., str], tmp_path: Path, where: str
) -> None:
    manifest = _manifest(snapshot)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(snapshot / manifest["parts"][0]["file"], outside / "part.parquet")
    manifest["parts"][0]["file"] = str(outside / "part.parquet") if where == "ABSOLUTE" else where
    _save(snapshot, manifest)
    _refused(snapshot, url_for("chroma"), "outside the snapshot directory")


def test_nan_vector_is_refused_before_any_write(snapshot: Path, url_for: Callable[..., str]) -> None:
    # the NaN is in the last part: with a copy already streaming, earlier parts would be written
    last = len(_manifest(snapshot)["parts"]) - 1
    _rewrite_part(snapshot, last, _nan_vector)
    _refused(snapshot, url_for("chroma"), "NaN or infinite vector; nothing was written")


def test_intact_snapshot_still_imports(snapshot: Path, url_for: Callable[..., str]) -> None:
    from ..chroma._plain import plain_client

    url = url_for("chroma")
    report = import_snapshot(snapshot, url, metadata_policy="flatten")
    assert report.status == "verified"
    with plain_client(url) as client:
        assert client.get_collection(_name(url)).count() == 600


def _forge_consistently(folder: Path) -> None:
    """Edit a record and recompute every checksum the manifest holds (the part's SHA-256, size,
    content digest and per-bin digests, the snapshot's content digest): a snapshot that agrees
    with itself."""
    from vectorport._digest import record_digest
    from vectorport.backends.parquet._format import bins_of, records_of

    _rewrite_part(folder, 0, _edit_text)
    manifest = _manifest(folder)
    digest = 0
    records = records_of(pq.read_table(folder / manifest["parts"][0]["file"]), None, True, DIM)
    for rec in records:
        digest ^= int.from_bytes(record_digest(rec.key, rec.vector, rec.metadata, rec.text), "little")
    manifest["parts"][0]["digest"] = digest.to_bytes(16, "little").hex()
    manifest["parts"][0]["bins"] = bins_of(records).to_sparse()
    manifest["digest"] = fold([p["digest"] for p in manifest["parts"]])
    _save(folder, manifest)


def test_a_consistent_forgery_is_refused_by_the_digest_export_printed(
    snapshot: Path, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from vectorport.cli import app
    from vectorport.snapshot import snapshot_url

    runner = CliRunner()
    sealed = tmp_path / "sealed"
    out = runner.invoke(app, ["export", "memory://integrity-src", str(sealed), "--no-verify", "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    expected, content = report["snapshot_digest"], report["digest"]
    assert expected == "sha256:" + hashlib.sha256((sealed / MANIFEST).read_bytes()).hexdigest()
    human = runner.invoke(app, ["export", "memory://integrity-src", str(tmp_path / "again")])
    assert "snapshot digest: sha256:" in human.stdout, human.output

    _forge_consistently(sealed)
    with vectorport.connect(snapshot_url(sealed)) as forged:
        forged.check_integrity()  # the forgery agrees with itself: only the digest can tell
    url = url_for("chroma")
    for digest in (expected, expected.removeprefix("sha256:").upper(), content):
        with pytest.raises(vectorport.VectorportError, match="is not the one expected"):
            import_snapshot(sealed, url, expect_digest=digest)
    out = runner.invoke(app, ["import", str(sealed), url, "--expect-digest", expected])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and isinstance(out.exception, SystemExit)
    errors = [line for line in out.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "not the one expected" in out.stderr and expected in out.stderr, out.stderr
    assert _name(url) not in _collections(url)  # nothing was created, let alone written
    out = runner.invoke(
        app, ["verify", snapshot_url(sealed), "memory://integrity-src", "--expect-digest", expected]
    )
    assert out.exit_code == 2 and "not the one expected" in out.stderr, out.output


def test_the_expected_digest_lets_the_intact_snapshot_in_and_is_checked_for_form(
    snapshot: Path, url_for: Callable[..., str]
) -> None:
    from vectorport.cli import app
    from vectorport.snapshot import snapshot_url

    with vectorport.connect(snapshot_url(snapshot)) as snap:
        info = snap.info()["snapshot"]
    url = url_for("chroma")
    out = CliRunner().invoke(
        app,
        [
            "import",
            str(snapshot),
            url,
            "--expect-digest",
            info["snapshot_digest"],
            "--metadata-policy",
            "flatten",
        ],
    )
    assert out.exit_code == 0, out.output
    report = import_snapshot(
        snapshot, url_for("chroma"), expect_digest=info["digest"], metadata_policy="flatten"
    )
    assert report.status == "verified"
    for bad in ("abc", "sha256:" + "0" * 32, "g" * 64):
        out = CliRunner().invoke(app, ["import", str(snapshot), url_for("chroma"), "--expect-digest", bad])
        assert out.exit_code == 2 and "is not a digest" in out.stderr, out.output
    out = CliRunner().invoke(
        app, ["verify", "memory://integrity-src", url, "--expect-digest", info["snapshot_digest"]]
    )
    assert out.exit_code == 2 and "not one" in out.stderr, out.output
