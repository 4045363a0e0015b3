"""An embedded Chroma collection takes one writing process at a time.

A ``PersistentClient`` keeps a collection's HNSW segment in memory and flushes it to the
directory; Chroma documents the embedded client as not process-safe, and four processes writing
one collection broke its index (the next write failed with "Error creating hnsw segment reader:
Nothing found on disk"). Chroma itself takes no lock, so every vectorport process claims a
collection before its first write to it: an exclusive ``flock`` on a lock file of that
directory and collection, kept under :func:`~vectorport._paths.state_dir` (nothing is added to
the user's directory), held until the last store of the process on that collection closes. A
process that finds the collection claimed waits up to :data:`WAIT_SECONDS` (a run that is just
ending) and then raises :class:`ConflictError` naming the process that holds it. Reads take no
claim; other collections of the directory are not held back. A server (``chroma run``) takes
writers from any number of processes, and is what the error advises.

What this cannot see: a process that is not vectorport (an app's own ``PersistentClient``), or
one given another ``VECTORPORT_STATE_DIR``. Where no lock file can be made (a read-only state
directory), the write goes on unclaimed."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time

from ..._paths import state_dir
from ...exceptions import Advised, ConflictError

__all__ = ["WAIT_SECONDS", "claim", "lock_file", "release"]

WAIT_SECONDS = 10.0
"""How long a process waits for another one's claim on a directory before it gives up
(``VECTORPORT_CHROMA_WRITER_WAIT`` in the environment, in seconds, sets another)."""

_HELD: dict[str, tuple[int, int]] = {}
"""Database file -> (the descriptor holding its lock, how many connections of this process
claimed it)."""
_GUARD = threading.Lock()


def claim(directory: str, collection: str, where: str) -> str | None:
    """Claim ``collection`` of the embedded ``directory`` for this process's writes; returns
    the claim, to :func:`release` once (``None``: no lock file could be made, nothing held)."""
    key = lock_file(directory, collection)
    with _GUARD:
        held = _HELD.get(key)
        if held is not None:
            _HELD[key] = (held[0], held[1] + 1)
            return key
        try:
            os.makedirs(os.path.dirname(key), exist_ok=True)
            fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        try:
            _lock(fd, directory, collection, where)
        except BaseException:
            os.close(fd)
            raise
        _HELD[key] = (fd, 1)
        return key


def lock_file(directory: str, collection: str) -> str:
    """The lock file of one collection of an embedded directory, under the state directory."""
    name = f"{os.path.realpath(directory)}\0{collection}".encode()
    digest = hashlib.blake2b(name, digest_size=12).hexdigest()
    return str(state_dir() / "chroma-writers" / f"{digest}.lock")


def release(key: str) -> None:
    """Let go of one :func:`claim`; the lock goes with the last one."""
    with _GUARD:
        held = _HELD.pop(key, None)
        if held is None:
            return
        fd, count = held
        if count > 1:
            _HELD[key] = (fd, count - 1)
            return
        os.close(fd)  # closing the descriptor releases its flock


def _lock(fd: int, directory: str, collection: str, where: str) -> None:
    deadline = time.monotonic() + _wait_seconds()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    holder = _holder(fd)
    raise ConflictError(
        Advised.of(
            "{}: another process{} is writing collection {!r} of the embedded Chroma directory {}; "
            "an embedded Chroma collection takes one writing process at a time (concurrent writers "
            "damage its index). Wait for it to end, or serve the directory with `chroma run --path "
            "{}` and write through chroma+http://HOST:PORT",
            where,
            f" (pid {holder})" if holder else "",
            collection,
            directory,
            directory,
        )
    )


def _wait_seconds() -> float:
    raw = os.environ.get("VECTORPORT_CHROMA_WRITER_WAIT")
    try:
        return WAIT_SECONDS if raw is None else max(0.0, float(raw))
    except ValueError:
        return WAIT_SECONDS


def _holder(fd: int) -> int | None:
    """The pid holding a flock on ``fd``'s file, from ``/proc/locks`` (Linux), if it says."""
    st = os.fstat(fd)
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with contextlib.suppress(OSError, ValueError), open("/proc/locks") as locks:
        for line in locks:
            parts = line.split()
            if len(parts) > 5 and parts[1] == "FLOCK" and parts[5] == inode:
                return int(parts[4])
    return None
