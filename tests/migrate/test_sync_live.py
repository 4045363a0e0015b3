"""``sync`` against real backends: a source that keeps changing while sync runs again and again,
and a sync killed with SIGKILL at random points; after a final ``sync --delete`` the target
equals the source, checked by ``verify`` and by each backend's own client."""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.migrate import Checkpoint, sync
from vectorport.sync._state import committed
from vectorport.testing.backends import cycle_params

from ._raw import raw_metadata

DIM = 16
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _record(i: int, version: int, rng: random.Random) -> Record:
    vec = np.random.default_rng(i * 7919 + version).standard_normal(DIM).astype(np.float32)
    meta = {"i": i, "v": version, "lang": rng.choice(["en", "de", "fr"])}
    return Record(f"doc/{i:06d}.md#chunk{i % 3}", vec, meta, f"chunk {i} version {version}")


def _load(url: str, n: int) -> None:
    rng = random.Random(1)
    store = vectorport.connect(url, dimension=DIM)
    store.upsert([_record(i, 0, rng) for i in range(n)])
    store.close()


def _source_metadata(url: str) -> dict[str, dict[str, Any]]:
    store = vectorport.connect(url)
    try:
        return {r.key: r.metadata for page in store.scan(include=["metadata"]) for r in page}
    finally:
        store.close()


def _assert_equal(source: str, target: str) -> None:
    check = vectorport.verify(source, target, sample_queries=5)
    assert check.data_equal, check.to_dict()
    expected = _source_metadata(source)
    assert raw_metadata(target) == expected  # as the backend's own client sees it
    assert raw_metadata(source) == expected


class Writer(threading.Thread):
    """Keeps upserting changed versions, adding and deleting records in the source."""

    def __init__(self, url: str, n: int) -> None:
        super().__init__(daemon=True)
        self.url, self.next, self.stop = url, n, threading.Event()
        self.ops = 0
        self.error: BaseException | None = None
        self.keys = list(range(n))

    def run(self) -> None:
        rng = random.Random(2)
        store = vectorport.connect(self.url)
        try:
            while not self.stop.is_set():
                op = rng.random()
                if op < 0.5:
                    picked = rng.sample(self.keys, 5)
                    store.upsert([_record(i, rng.randint(1, 10**6), rng) for i in picked])
                elif op < 0.8:
                    new = list(range(self.next, self.next + 5))
                    self.next += 5
                    self.keys += new
                    store.upsert([_record(i, 0, rng) for i in new])
                else:
                    gone = rng.sample(self.keys, 3)
                    self.keys = [k for k in self.keys if k not in gone]
                    store.delete([_record(i, 0, rng).key for i in gone])
                self.ops += 1
                time.sleep(0.02)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            store.close()


LIVE_PAIRS = cycle_params()
"""Every registered backend once as a source and once as a target."""


@pytest.mark.parametrize(("src_backend", "dst_backend"), LIVE_PAIRS)
def test_sync_keeps_up_with_a_live_source(
    src_backend: str, dst_backend: str, url_for: Callable[..., str], tmp_path: Path
) -> None:
    n = 1200
    source, target = url_for(src_backend), url_for(dst_backend)
    _load(source, n)
    state = tmp_path / "state.sqlite"
    writer = Writer(source, n)
    writer.start()
    reports = []
    try:
        for round_ in range(4):
            reports.append(sync(source, target, state=state, delete=round_ % 2 == 1))
            time.sleep(0.3)
    finally:
        writer.stop.set()
        writer.join(timeout=30)
    assert writer.error is None, writer.error
    assert writer.ops > 20, "the writer barely ran: the test proves nothing"
    modes = [r.sync.mode for r in reports]
    assert modes[0] == "full" and set(modes[1:]) == {"incremental"}, modes
    assert all(r.sync.target_read == 0 for r in reports[1:])
    assert sum(r.sync.changed + r.sync.new for r in reports[1:]) > 0
    final = sync(source, target, state=state, delete=True)
    assert final.sync.mode == "incremental" and final.sync.target_read == 0
    _assert_equal(source, target)
    # and nothing is left to do
    again = sync(source, target, state=state, delete=True)
    assert (again.sync.written, again.sync.gone) == (0, 0)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "vectorport", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _kill_at_random_points(cmd: list[str], state: Path, tmp_path: Path, kills: int, total: int) -> None:
    """Run ``cmd`` and SIGKILL it ``kills`` times once it has committed more writes, then
    let the last run finish."""
    rng = random.Random()
    before = 0
    for point in range(kills):
        log = tmp_path / f"kill{point}.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        goal = min(before + rng.randint(total // 20, total // 10), total // 2)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            running = committed(state) if state.exists() else None
            if running is not None and int(running.get("committed_written", 0)) >= goal:
                break
            time.sleep(0.02)
        time.sleep(rng.random() * 0.2)  # anywhere inside a batch
        assert proc.poll() is None, f"finished before kill point {point}: {log.read_text()}"
        proc.kill()
        proc.wait()
        assert proc.returncode == -9
        running = committed(state)
        assert running is not None and int(running.get("committed_written", 0)) >= before
        before = int(running.get("committed_written", 0))


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_sigkill_during_sync_at_random_points_then_resume(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    n = 5000
    source = url_for("pgvector")
    # paced to 1,000 vectors/s, so each kill lands while records are being written
    target = url_for("s3vectors", write_rate=1000)
    _load(source, n)
    state = tmp_path / "state.sqlite"
    base = ["sync", source, target, "--state", str(state), "--batch-size", "100", "--no-progress", "--json"]
    # the first (full) pass, killed three times
    _kill_at_random_points(_cli(*base), state, tmp_path, 3, n)
    done = subprocess.run(_cli(*base), env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sync"]["resumed"] and report["sync"]["mode"] == "full"
    _assert_equal(source, target)
    # an incremental pass with updates, inserts and deletions, killed twice
    rng = random.Random(3)
    store = vectorport.connect(source)
    store.upsert(
        [_record(i, 1, rng) for i in range(0, n, 2)] + [_record(i, 0, rng) for i in range(n, n + 300)]
    )
    store.delete([_record(i, 0, rng).key for i in range(1, 600, 3)])  # 200 keys
    store.close()
    _kill_at_random_points(_cli(*base, "--delete"), state, tmp_path, 2, n // 2 + 300)
    done = subprocess.run(_cli(*base, "--delete"), env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["sync"]["resumed"] and report["sync"]["mode"] == "incremental"
    assert report["sync"]["target_read"] == 0
    _assert_equal(source, target)
    check = vectorport.verify(source, target, sample_queries=0)
    assert check.duplicates == 0 and check.target_count == n + 300 - 200


def _as_from_a_terminal() -> None:
    """In the child, before it runs: SIGINT handled by default and not blocked, as a terminal's
    Ctrl-C finds a command, whatever an earlier test or library did to this worker's (an ignored
    or blocked SIGINT is inherited across exec, and Python then never sees the signal)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _sigint_state() -> str:
    """This process's ignored and blocked signal masks (``/proc``), for a failure message."""
    status = Path("/proc/self/status")
    lines = status.read_text().splitlines() if status.exists() else []
    return "; ".join(ln for ln in lines if ln.startswith(("SigBlk", "SigIgn")))


def _interrupt_when(cmd: list[str], ready: Callable[[], bool]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        cmd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_terminal,  # two calls between fork and exec, no lock taken
    )
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and not ready():
        time.sleep(0.02)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _resume_line(stderr: str) -> list[str]:
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("resume: ")]
    words = shlex.split(line.removeprefix("resume: "))
    assert words[0] == "vectorport"
    return _cli(*words[1:])


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_ctrl_c_says_what_was_committed_and_how_to_resume(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    n = 3000
    source = url_for("pgvector")
    _load(source, n)
    # migrate, interrupted mid-copy. As for sync below: on a starved machine the signal can land
    # once the run has ended (the interpreter exits 0 from its shutdown, the report printed); that
    # run tested no interruption, so it is tried again on a new target.
    for attempt in range(3):
        target = url_for("s3vectors", write_rate=200)  # 15 s of copy: the signal lands mid-copy
        ck = tmp_path / f"ck{attempt}.json"
        cmd = _cli("migrate", source, target, "--checkpoint", str(ck), "--batch-size", "100", "--no-progress")

        def copied(ck: Path = ck) -> bool:
            saved = Checkpoint.load(ck) if ck.exists() else None
            return saved is not None and saved.copied >= 500

        res = _interrupt_when(cmd, copied)
        if not (res.returncode == 0 and "status: verified" in res.stdout):
            break
    assert res.returncode == 130, (res.stdout, res.stderr, _sigint_state())
    saved = Checkpoint.load(ck)
    assert saved is not None and not saved.complete
    # mid-copy as intended; on a starved machine the signal may land after the last batch, and then
    # the line says the copy was cut short before it was marked complete: either way it names the count
    (said,) = [ln for ln in res.stderr.splitlines() if ln.startswith("interrupted: ")]
    assert f"{saved.copied:,} records" in said, said
    assert saved.scanned or said == f"interrupted: {saved.copied:,} records committed"
    assert f"checkpoint: {ck}" in res.stderr
    again = subprocess.run(_resume_line(res.stderr), env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"resumed after {saved.copied}" in again.stdout and "status: verified" in again.stdout
    # sync, interrupted mid-pass. On a loaded machine the signal can land as the pass ends (the
    # interpreter then exits 0 from its shutdown): that run did not test an interruption, so
    # it is tried again on a new target.
    for attempt in range(3):
        target = url_for("s3vectors", write_rate=300)
        state = tmp_path / f"state{attempt}.sqlite"
        cmd = _cli("sync", source, target, "--state", str(state), "--batch-size", "100", "--no-progress")

        def written(state: Path = state) -> bool:
            running = committed(state) if state.exists() else None
            return running is not None and int(running.get("committed_written", 0)) >= 500

        res = _interrupt_when(cmd, written)
        if not (res.returncode == 0 and "interrupted" not in res.stderr):
            break
    assert res.returncode == 130, res.stderr
    assert "interrupted: committed" in res.stderr and f"state: {state}" in res.stderr
    again = subprocess.run(_resume_line(res.stderr), env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "continued the pass" in again.stdout
    _assert_equal(source, target)
