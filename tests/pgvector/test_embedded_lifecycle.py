"""The embedded server's lifecycle on a real server: a store whose server died (``kill -9`` of
the postmaster) or was stopped starts it again on its next call; a process killed with SIGKILL
leaves no postgres processes behind once the watchdog sees the server unused; a kept server
(``vectorport pgvector start``) outlives its users until ``pgvector stop``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import vectorport
from vectorport.backends.pgvector import start_embedded, stop_embedded

pytestmark = pytest.mark.pgvector
psutil = pytest.importorskip("psutil")

# A process that opens a pgvector:// store, writes, says so, then waits to be killed.
USER = """
import sys, vectorport
store = vectorport.connect(f"pgvector://{sys.argv[1]}?table=docs&index=exact", dimension=2)
store.upsert([vectorport.Record("a", [1, 0])])
print("ready", flush=True)
for line in sys.stdin:
    print(",".join(store.query([1, 0], k=1).keys), flush=True)
"""


def alive(pid: int | None) -> bool:
    try:
        return bool(pid) and pid > 0 and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def postmaster_pid(data: Path) -> int | None:
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if alive(pid) else None


def _until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _server_processes(data: Path) -> list[psutil.Process]:
    """The postmaster of ``data`` and its children (their titles do not name the directory),
    and any other process whose command line names it (the watchdog)."""
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["cmdline"]):
        if str(data) in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
            with contextlib.suppress(psutil.Error):
                found.extend(proc.children(recursive=True))
    return [p for p in found if alive(p.pid)]


@pytest.fixture
def data() -> Iterator[Path]:
    """A data directory of its own. Not under pytest's tmp_path: pytest resets
    /tmp/pytest-of-<user> to mode 0700 when any session starts, and when the tests run as root
    the server runs as another user that must reach the directory (see ``pg_dir``)."""
    root = Path(tempfile.mkdtemp(prefix="vectorport-lifecycle-"))
    root.chmod(0o755)
    yield root / "pgdata"
    stop_embedded(root / "pgdata")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def user(data: Path) -> Iterator[Callable[[], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", USER, str(data)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _kill_postmaster(data: Path) -> int:
    pid = postmaster_pid(data)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert _until(lambda: not alive(pid), 10)
    return pid


def test_a_killed_postmaster_is_started_again_by_the_next_call(data: Path) -> None:
    with vectorport.connect(f"pgvector://{data}?table=docs&index=exact", dimension=2) as store:
        store.upsert([vectorport.Record("a", [1, 0])])
        dead = _kill_postmaster(data)
        started = time.monotonic()
        assert store.query([1, 0], k=1).keys == ["a"]  # the lost connection is replaced
        assert time.monotonic() - started < 30
        assert postmaster_pid(data) not in (None, dead)
        store.upsert([vectorport.Record("b", [0, 1])])
        assert store.count() == 2
        # stopped behind its back: the same
        assert stop_embedded(data)
        assert store.get(["b"])[0].key == "b"
        assert postmaster_pid(data) is not None
    stop_embedded(data)


def test_two_processes_whose_server_died_start_one_server(
    data: Path, user: Callable[[], subprocess.Popen[str]]
) -> None:
    others = [user(), user()]
    with vectorport.connect(f"pgvector://{data}?table=docs", dimension=2) as store:
        _kill_postmaster(data)
        for proc in others:  # all three reconnect at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        assert store.query([1, 0], k=1).keys == ["a"]
        for proc in others:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "a"
        postmasters = [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if (p.info["cmdline"] or [])[1:3] == ["-D", str(data)]
        ]
        assert postmasters == [postmaster_pid(data)]


def test_a_process_killed_with_sigkill_leaves_no_server_behind(
    data: Path, user: Callable[[], subprocess.Popen[str]]
) -> None:
    proc = user()
    pid = postmaster_pid(data)
    assert pid is not None
    family = [psutil.Process(pid), *psutil.Process(pid).children()]
    assert any(p.name() == "postgres" for p in family)
    proc.kill()
    proc.wait()
    # the documented condition: the watchdog finds no live user and no client twice, ~2 s apart
    assert _until(lambda: not any(alive(p.pid) for p in family), 30), [p.pid for p in family if alive(p.pid)]
    assert _until(lambda: not _server_processes(data), 10), _server_processes(data)
    # the next user starts it again, and, the last one to exit, stops it
    again = subprocess.run(
        [sys.executable, "-c", USER, str(data)], input="go\n", capture_output=True, text=True, timeout=120
    )
    assert again.stdout.split() == ["ready", "a"], again.stderr
    assert _until(lambda: not _server_processes(data), 10), _server_processes(data)


def test_a_kept_server_outlives_its_killed_users_until_stop(
    data: Path, user: Callable[[], subprocess.Popen[str]]
) -> None:
    proc = user()
    start_embedded(data)  # kept from now on, though another process started it
    pid = postmaster_pid(data)
    proc.kill()
    proc.wait()
    time.sleep(4)  # twice the watchdog's idle delay
    assert postmaster_pid(data) == pid
    assert stop_embedded(data)
    assert not alive(pid)


def test_a_standalone_backends_lock_file_is_no_server(tmp_path: Path) -> None:
    # initdb's bootstrap and single-user backends write their pid negated into postmaster.pid;
    # a process reading it then (a second user, the watchdog, an exit handler) sees no server
    # instead of failing on psutil's "pid must be a positive integer"
    data = tmp_path / "data"
    data.mkdir()
    lines = [f"-{os.getpid()}", str(data), "1700000000", "5432", "/tmp", "", "0 0", "starting"]
    (data / "postmaster.pid").write_text("\n".join(lines) + "\n")
    from vectorport.backends.pgvector import _embedded, _watchdog

    assert not _watchdog.alive(-os.getpid())
    assert _watchdog.postmaster_pid(data) is None
    assert _embedded._postmaster_info(_embedded.provider(None), data) is None
    (data / "postmaster.pid").write_text("\n".join(lines[:3]))  # half written
    assert _embedded._postmaster_info(_embedded.provider(None), data) is None


def test_a_command_on_a_running_server_does_not_say_it_starts_one(data: Path) -> None:
    """``vectorport pgvector start`` keeps a server; every later pgvector:// command once
    printed "starting the embedded PostgreSQL server" although it only connected to it."""
    cli = [sys.executable, "-m", "vectorport"]
    started = subprocess.run(
        [*cli, "pgvector", "start", str(data)], capture_output=True, text=True, timeout=120
    )
    assert started.returncode == 0 and "starting the embedded PostgreSQL server" in started.stderr, (
        started.stderr
    )
    pid = postmaster_pid(data)
    with vectorport.connect(f"pgvector://{data}?table=docs", dimension=2) as store:
        store.upsert([vectorport.Record("a", [1, 0])])
    for args in (["info", f"pgvector://{data}?table=docs"], ["backends"]):
        out = subprocess.run([*cli, *args], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "starting the embedded" not in out.stderr, out.stderr
    assert postmaster_pid(data) == pid
