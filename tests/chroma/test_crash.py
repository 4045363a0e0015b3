"""A full-replace upsert survives a crash: every key keeps its old or gets its new version.

A writer process upserts new versions of the same keys in a loop; the writer (embedded) or the
``chroma run`` server is SIGKILLed at a random moment. Then every key must hold, exactly, the
last acknowledged version or one the writer had started: never missing, never a merge of two.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport.exceptions import BackendError

from ..conftest import _chroma_binary, free_port
from ._crash_writer import KEYS, stored, version

pytestmark = pytest.mark.chroma

WRITER = str(Path(__file__).with_name("_crash_writer.py"))
# What vectorport says when Chroma cannot open a collection's HNSW index because its own
# process died while saving it (Chroma rewrites index_metadata.pickle in place): damage in
# Chroma's storage, which no client can prevent, reported as such.
DAMAGED = "Chroma cannot read this collection's on-disk HNSW index"
MAX_DAMAGED = 3
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONTRACEMALLOC")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC_ROOT, env.get("PYTHONPATH")) if p)
    env["ANONYMIZED_TELEMETRY"] = "False"
    return env


def _writer(url: str, first: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, WRITER, "write", url, str(first)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line == "ready\n", f"the writer did not start: {line!r}"
    return proc


def _first_write(proc: subprocess.Popen[str]) -> int:
    """Wait for the writer's first acknowledged write (however loaded the machine is, each
    round then kills a writer that is writing)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip(), "the writer stopped before its first write"
    return int(line)


def _acknowledged(proc: subprocess.Popen[str], first: int) -> list[int]:
    proc.wait(timeout=30)
    assert proc.stdout is not None
    with proc.stdout:
        return [first, *(int(line) for line in proc.stdout.read().split())]


def _dump(url: str) -> dict[str, Any]:
    """Every record, read by a new process (an embedded directory is opened once at a time)."""
    out = subprocess.run(
        [sys.executable, WRITER, "dump", url], capture_output=True, text=True, env=_env(), timeout=60
    )
    if out.returncode and DAMAGED in out.stderr:
        raise BackendError(out.stderr.strip().splitlines()[-1])
    assert out.returncode == 0, out.stderr
    found: dict[str, Any] = json.loads(out.stdout)
    return found


class Versions:
    """Which versions each key may hold after a kill."""

    def __init__(self) -> None:
        self.possible = {0}
        self.next = 1

    def after(self, acknowledged: list[int]) -> None:
        """A writer started at ``self.next`` and had ``acknowledged`` when it died; the one
        after its last acknowledged version may or may not have reached the log."""
        if acknowledged:
            assert acknowledged == list(range(self.next, acknowledged[-1] + 1))
            self.possible = {acknowledged[-1], acknowledged[-1] + 1}
        else:
            self.possible.add(self.next)
        self.next = max(self.possible) + 1

    def check(self, stored: dict[str, Any]) -> None:
        assert sorted(stored) == sorted(KEYS), f"{len(set(KEYS) - set(stored))} keys are missing"
        for key, (vector, metadata, text) in stored.items():
            held = [v for v in self.possible if version(key, v) == (vector, metadata, text)]
            assert held, f"{key} holds {metadata}, {text!r}: not one whole version of {sorted(self.possible)}"


def _judged(read: Callable[[str], dict[str, Any]], url: str, versions: Versions) -> bool:
    """Check every key read from ``url`` against ``versions``; ``False`` when Chroma cannot
    open the index it was killed while saving (then the error vectorport raises must say so,
    and the round starts again on a new directory: it cannot judge the upsert)."""
    try:
        found = read(url)
    except BackendError as exc:
        if DAMAGED not in str(exc):
            raise
        assert "restore the collection from a vectorport snapshot" in str(exc)
        return False
    versions.check(found)
    return True


def _seed(url: str) -> None:
    subprocess.run(
        [sys.executable, WRITER, "seed", url], env=_env(), timeout=60, check=True, capture_output=True
    )


def test_killing_the_writer_never_loses_a_record(tmp_path: Path) -> None:
    url = f"chroma://{tmp_path / 'db0'}?collection=crash"
    rng = random.Random(7)
    _seed(url)
    versions = Versions()
    deadline = time.monotonic() + 30  # and one round more: the test stays under a minute
    rounds = damaged = 0
    while rounds < 3 or (rounds < 10 and time.monotonic() < deadline):
        writer = _writer(url, versions.next)
        first = _first_write(writer)
        time.sleep(rng.uniform(0.0, 1.0))
        assert writer.poll() is None, "the writer stopped on its own"
        writer.send_signal(signal.SIGKILL)
        versions.after(_acknowledged(writer, first))
        if _judged(_dump, url, versions):
            rounds += 1
            continue
        damaged += 1
        assert damaged <= MAX_DAMAGED, "Chroma's index was damaged in most rounds: nothing judged"
        url = f"chroma://{tmp_path / f'db{damaged}'}?collection=crash"
        _seed(url)
        versions = Versions()


def _server(path: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = (path.parent / "server.log").open("ab")
    proc = subprocess.Popen(
        [_chroma_binary(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=_env(),
    )
    log.close()
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc, f"chroma+http://127.0.0.1:{port}?collection=crash"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("chroma run did not start") from None
            time.sleep(0.1)


def test_killing_the_server_never_loses_a_record(tmp_path: Path) -> None:
    rng = random.Random(11)
    server, url = _server(tmp_path / "db0")
    try:
        _seed(url)
        versions = Versions()
        deadline = time.monotonic() + 32
        rounds = damaged = 0
        while rounds < 2 or (rounds < 12 and time.monotonic() < deadline):
            writer = _writer(url, versions.next)
            first = _first_write(writer)
            time.sleep(rng.uniform(0.0, 1.0))
            assert writer.poll() is None, "the writer stopped on its own"
            server.send_signal(signal.SIGKILL)
            server.wait()
            # Killed too: with the server gone no version after the one in flight can land.
            writer.send_signal(signal.SIGKILL)
            versions.after(_acknowledged(writer, first))
            server, url = _server(tmp_path / f"db{damaged}")
            # a client of the server can read in this process
            if _judged(stored, url, versions):
                rounds += 1
                continue
            damaged += 1
            assert damaged <= MAX_DAMAGED, "Chroma's index was damaged in most rounds: nothing judged"
            server.kill()
            server.wait()
            server, url = _server(tmp_path / f"db{damaged}")
            _seed(url)
            versions = Versions()
    finally:
        server.kill()
        server.wait()
