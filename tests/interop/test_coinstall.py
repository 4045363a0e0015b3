"""``pip install vectorport[pgvector] langchain-postgres vecs`` works: the pgvector-python those
two pin (< 0.4) is what this environment holds, and vectorport's pgvector reads and a
``vectorport migrate`` from pgvector work beside it (with it, pgvector-python 0.3 loaded vectors
as numpy arrays and every scan died on ``.to_numpy()``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import requires, version
from pathlib import Path

import numpy as np
import pytest

import vectorport

pytestmark = [pytest.mark.interop, pytest.mark.pgvector]

ROOT = Path(__file__).resolve().parents[2]


def _pins(package: str) -> list[str]:
    return [r for r in requires(package) or [] if r.split(";")[0].replace(" ", "").startswith("pgvector")]


def test_the_environment_holds_the_pgvector_python_the_frameworks_pin() -> None:
    pytest.importorskip("langchain_postgres")
    pytest.importorskip("vecs")
    from packaging.requirements import Requirement
    from packaging.version import Version

    installed = Version(version("pgvector"))
    assert installed < Version("0.4"), f"pgvector-python {installed}: the interop extra pins < 0.4"
    for package in ("langchain-postgres", "vecs"):
        pins = _pins(package)
        assert pins, f"{package} no longer requires pgvector-python"
        assert all(installed in Requirement(pin).specifier for pin in pins), (package, pins, installed)


@pytest.mark.chroma
def test_scans_queries_and_migrate_from_pgvector_beside_it(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    pytest.importorskip("langchain_postgres")
    pytest.importorskip("vecs")
    import pgvector.psycopg  # noqa: F401  # loaded, as the frameworks load it, in the same process

    rng = np.random.default_rng(13)
    vecs = rng.standard_normal((300, 12)).astype(np.float32)
    source = url_for("pgvector")
    store = vectorport.connect(source, dimension=12, metric="cosine")
    try:
        store.upsert(
            vectorport.Record(f"doc/{i}", v, {"i": i, "even": i % 2 == 0}, f"text {i}")
            for i, v in enumerate(vecs)
        )
        scanned = {
            r.key: r.vector for page in store.scan(batch_size=64, include=["vector"]) for r in page.records
        }
        assert len(scanned) == 300
        assert all(scanned[f"doc/{i}"].tobytes() == v.tobytes() for i, v in enumerate(vecs))
        hit = store.query(vecs[5], k=3, filter={"even": False}, include=["vector"]).matches[0]
        assert hit.key == "doc/5" and hit.vector is not None and hit.vector.tobytes() == vecs[5].tobytes()
    finally:
        store.close()

    target = url_for("chroma")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-m", "vectorport", "migrate", source, target, "--no-progress", "--json",
         "--checkpoint", str(tmp_path / "ck.json")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    assert report["verification"]["ok"] and report["verification"]["counts"]["target"] == 300, report
