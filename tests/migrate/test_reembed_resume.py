"""A re-embedding migration killed twice (SIGKILL) embeds each chunk exactly once: the embedder's
calls are counted where they are paid for, by the local server speaking Voyage's protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.migrate import Checkpoint

from ..ingest.voyage_server import VoyageServer, fake_vector

N = 50_000
CONCURRENCY = 4
BATCH = 128  # the Voyage embedder's request size: one request per write batch
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _text(i: int) -> str:
    return f"chunk {i} of the re-embedding corpus"


def _run(args: list[str], srv: VoyageServer, log: Path) -> subprocess.Popen[bytes]:
    """The CLI in a subprocess: stderr to ``log``, stdout (the JSON report) beside it."""
    env = dict(os.environ, VOYAGE_API_KEY=srv.api_key, VOYAGE_BASE_URL=srv.base_url)
    env["PYTHONPATH"] = SRC_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    with open(log, "wb") as err, open(log.with_suffix(".json"), "wb") as out:
        cli = [sys.executable, "-m", "vectorport", *args]
        return subprocess.Popen(cli, env=env, stdout=out, stderr=err)


def _kill_when_held(proc: subprocess.Popen[bytes], srv: VoyageServer, log: Path) -> None:
    """Kill -9 once every writer thread waits on a held request: every vector the server
    answered before was written (a writer embeds, writes, then takes its next batch)."""
    deadline = time.monotonic() + 60
    while srv.held < CONCURRENCY and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before its kill: {log.read_text()}"
    assert srv.held == CONCURRENCY, f"{srv.held} held requests: {log.read_text()}"
    proc.kill()
    proc.wait()
    assert proc.returncode == -9
    srv.release()


@pytest.mark.pgvector
@pytest.mark.slow
def test_reembed_killed_twice_embeds_each_chunk_once(url_for: Callable[..., str], tmp_path: Path) -> None:
    source, target = url_for("pgvector", "reembed-src"), url_for("pgvector", "reembed-dst")
    with vectorport.connect(source, dimension=4) as src:
        src.upsert(Record(f"k{i}", np.array([1.0, 0, 0, i]), {"i": i}, _text(i)) for i in range(N))
    ck = tmp_path / "ck.json"
    args = ["migrate", source, target, "--reembed", "voyage:voyage-test", "--checkpoint", str(ck)]
    args += ["--batch-size", str(BATCH), "--concurrency", str(CONCURRENCY), "--no-progress", "--json"]
    with VoyageServer() as srv:
        srv.throttle_every = 17  # 429s along the way: retried, nothing lost
        copied = []
        for run, at in enumerate((N // 5, N // 2)):
            srv.hold_after(at - sum(srv.embedded.values()))
            log = tmp_path / f"run{run}.log"
            _kill_when_held(_run([*args, *(["--resume"] if run else [])], srv, log), srv, log)
            saved = Checkpoint.load(ck)
            assert saved is not None and not saved.complete
            copied.append(saved.copied)
        log = tmp_path / "last.log"
        last = _run([*args, "--resume"], srv, log)
        assert last.wait(timeout=300) == 0, log.read_text()
        chunks = {_text(i) for i in range(N)}
        counts = {t: c for t, c in srv.embedded.items() if t in chunks}
        assert srv.throttled > 0
    report = json.loads(log.with_suffix(".json").read_text())
    # every chunk embedded, and embedded once: through two kills, a resume embedded nothing the
    # killed run had written (past its checkpoint or not)
    assert len(counts) == N
    twice = sorted(int(t.split()[1]) for t, c in counts.items() if c > 1)
    assert not twice, (len(twice), twice[:3], twice[-3:], copied, report["copy"])
    assert report["copy"]["resumed_from"] == copied[-1]
    assert report["copy"]["retries"] > 0  # the 429s of the last run, counted
    assert report["copy"]["records"] + report["copy"]["skipped"] == N - copied[-1]
    assert report["verification"]["ok"], report["verification"]
    with vectorport.connect(target) as dst:
        assert dst.count() == N
        assert dst.spec.embedding_model == "voyage:voyage-test"
        # the vectors are the model's: those the server computes for the chunks' texts
        for rec in dst.get([f"k{i}" for i in range(0, N, N // 50)]):
            assert rec.text is not None and rec.vector is not None
            want = fake_vector("voyage-test", "Represent the document for retrieval: " + rec.text, 32)
            np.testing.assert_allclose(rec.vector, want, atol=1e-6)
