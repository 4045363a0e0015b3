"""An embedded Chroma collection takes one writing process at a time: a second vectorport process
that writes the collection while another one does waits briefly, then is refused by name (the pid
that holds it, and `chroma run` as the way to write from several processes), with nothing
written; reads and the directory's other collections are not held back, and the collection is
writable again once the first process is done."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

import vectorport
from vectorport._exit import ExitCode
from vectorport.backends.chroma import _writers
from vectorport.exceptions import ConflictError

pytestmark = pytest.mark.chroma

HOLDER = """
import sys, numpy as np, vectorport
store = vectorport.connect(sys.argv[1], dimension=4)
store.upsert([vectorport.Record(f"held{i}", np.ones(4, dtype=np.float32) * (i + 1)) for i in range(3)])
print("written", flush=True)
sys.stdin.readline()  # holds its store open until the test says
store.close()
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    url = f"chroma://{tmp_path}/db?collection=docs"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written", proc.stderr
    try:
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.communicate("\n", timeout=60)


def test_a_second_writing_process_is_refused_by_name(
    holder: tuple[str, subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, proc = holder
    monkeypatch.setattr(_writers, "WAIT_SECONDS", 0.5)
    store = vectorport.connect(url)
    try:
        assert store.count() == 3  # reads are not held back
        other = vectorport.connect(url.replace("collection=docs", "collection=other"), dimension=4)
        other.upsert([vectorport.Record("o", np.ones(4, dtype=np.float32))])  # nor other collections
        other.close()
        with pytest.raises(ConflictError) as info:
            store.upsert([vectorport.Record("mine", np.zeros(4, dtype=np.float32) + 0.5)])
        message = str(info.value)
        assert f"pid {proc.pid}" in message and "chroma run --path" in message
        assert "one writing process at a time" in message
        assert store.count() == 3 and store.get(["mine"]) == []
        proc.communicate("\n", timeout=60)  # the holder ends: the directory is free
        store.upsert([vectorport.Record("mine", np.zeros(4, dtype=np.float32) + 0.5)])
        assert store.count() == 4
    finally:
        store.close()


def test_the_cli_says_so_without_a_traceback(
    holder: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, _ = holder
    src = f"chroma://{tmp_path}/src?collection=docs"
    source = vectorport.connect(src, dimension=4)
    source.upsert([vectorport.Record("k", np.ones(4, dtype=np.float32))])
    source.close()
    env = {"VECTORPORT_CHROMA_WRITER_WAIT": "0.5"}
    res = subprocess.run(
        [sys.executable, "-m", "vectorport", "migrate", src, url, "--no-verify"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert res.returncode == ExitCode.FAILURE, res.stderr
    assert "one writing process at a time" in res.stderr and "Traceback" not in res.stderr
    # nothing written, read with chromadb's own client
    raw = chromadb.PersistentClient(path=str(tmp_path / "db"), settings=Settings(anonymized_telemetry=False))
    got = raw.get_collection("docs").get(include=[])
    assert sorted(got["ids"]) == ["held0", "held1", "held2"]


def test_stores_of_one_process_share_the_claim(tmp_path: Path) -> None:
    url = f"chroma://{tmp_path}/db?collection=docs"
    a = vectorport.connect(url, dimension=4)
    b = vectorport.connect(url)
    try:
        a.upsert([vectorport.Record("a", np.ones(4, dtype=np.float32))])
        b.upsert([vectorport.Record("b", np.ones(4, dtype=np.float32) * 2)])
        a.close()
        b.upsert([vectorport.Record("c", np.ones(4, dtype=np.float32) * 3)])  # b's claim holds
        assert b.count() == 3
    finally:
        b.close()
    # every claim released: another process writes at once
    done = subprocess.run(
        [sys.executable, "-c", HOLDER.replace("sys.stdin.readline()", "pass"), url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
