"""The watchdog of an embedded server: stops it once no process uses it, even when the last
one was killed (SIGKILL, OOM killer, a CI timeout) and never ran its exit handlers.

The embedded layer lists the processes holding a handle on a server in
``DATA/.handle_pids.json`` and stops the server when the last of them *exits normally*; a
killed process stays listed, so nobody would ever stop it. A process that starts or uses a
server that is not kept (``vectorport pgvector start``, ``keep_server=true``) makes sure one
watchdog runs for its data directory: this file, run as a script (``python -I _watchdog.py
DATA_DIR MODULE``, outside the package so that it imports no more than it needs). It forks
into the background at once and then, every :data:`POLL` seconds, drops the dead processes
from the list; when none is left, no client is connected and the server is not kept, twice in
a row, it stops the server (a fast shutdown) under the layer's inter-process lock (the one a
process holds while it starts a server and adds itself to the list), then exits. It also exits
when the server stops by other means; whoever starts it again starts a new watchdog. One
watchdog per directory: it holds an exclusive ``flock`` on ``DATA/vectorport-watchdog.pid``.

The helpers here (liveness, the keep mark, pruning the list) are imported by
:mod:`._embedded` too; everything but the standard library is imported late.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["HANDLES", "KEEP_FILE", "WATCHDOG_FILE", "alive", "kept", "postmaster_pid", "prune_handles"]

HANDLES = ".handle_pids.json"
"""The embedded layer's list of the processes holding a handle on the server."""
KEEP_FILE = "vectorport.keep"
"""Holds the pid of a postmaster to leave running after its users exit (``pgvector start``)."""
WATCHDOG_FILE = "vectorport-watchdog.pid"
"""The running watchdog's pid; the watchdog holds an exclusive ``flock`` on it."""
POLL = 1.0
IDLE_POLLS = 2
_CLIENT = re.compile(r"\[local\]|\(\d+\)")  # a client backend's process title: "… [local] idle"


def alive(pid: int | None) -> bool:
    """Whether ``pid`` is a live process (a zombie is dead: it only waits to be reaped)."""
    import psutil

    if not pid or pid < 0:
        # PostgreSQL writes a negative pid into postmaster.pid for a standalone backend (initdb's
        # bootstrap and single-user runs): no server runs yet
        return False
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid of the live postmaster of ``data_dir`` (``None``: none runs)."""
    pid = _read_int(data_dir / "postmaster.pid")
    return pid if alive(pid) else None


def kept(data_dir: Path, pid: int | None) -> bool:
    """Whether the postmaster ``pid`` was asked to outlive its users (a mark left by an earlier
    server, since stopped or dead, does not count)."""
    return pid is not None and _read_int(data_dir / KEEP_FILE) == pid


def prune_handles(data_dir: Path) -> list[int]:
    """Drop dead processes from the handle list; the live ones."""
    path = data_dir / HANDLES
    try:
        pids = [int(p) for p in json.loads(path.read_text())]
    except (OSError, ValueError, TypeError):
        return []
    live = [p for p in pids if alive(p)]
    if live != pids:
        path.write_text(json.dumps(live))
    return live


def _has_clients(pid: int) -> bool:
    import psutil

    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return False
    for child in children:
        try:
            if _CLIENT.search(" ".join(child.cmdline())):
                return True
        except psutil.Error:
            continue
    return False


def _stop(pid: int) -> None:
    for sig, seconds in ((signal.SIGINT, 30.0), (signal.SIGQUIT, 5.0)):  # fast, then immediate
        try:
            os.kill(pid, sig)
        except OSError:
            return
        deadline = time.monotonic() + seconds
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not alive(pid):
            return


def watch(data_dir: Path, lock: Any) -> None:
    """Poll until the server stops, or stop it once it is unused (see the module docstring)."""
    idle = 0
    while True:
        time.sleep(POLL)
        if not (data_dir / "PG_VERSION").exists():
            return
        pid = postmaster_pid(data_dir)
        if pid is None:
            return
        if kept(data_dir, pid):
            idle = 0
            continue
        with lock:
            if prune_handles(data_dir) or _has_clients(pid):
                idle = 0
                continue
            idle += 1
            if idle >= IDLE_POLLS:
                _stop(pid)
                return


def main(argv: list[str]) -> int:
    import fcntl
    import importlib

    data_dir, module = Path(argv[1]), argv[2]
    if os.fork():
        return 0  # the spawner waits for this parent only
    os.setsid()
    os.chdir("/")
    fd = os.open(data_dir / WATCHDOG_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another watchdog watches this directory
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    layer = importlib.import_module(module)
    watch(data_dir, layer.PostgresServer._lock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
