"""One writer at a time per snapshot directory: an exclusive ``fcntl`` lock on
:data:`._format.LOCK` in the directory, taken without waiting, so a second writing process gets a
clear :class:`~vectorport.exceptions.ConflictError` at once instead of hanging. Readers take no
lock: a write never changes a file a reader may be reading (parts are new files, the manifest is
replaced by a rename).

``flock`` locks belong to an open file, so two stores of one process would refuse each other as
two processes do; threads of one process therefore queue on a lock per directory first, and
only another process is refused.

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> with WriteLock(folder):
...     with WriteLock(folder, wait=False):  # another writer (here: of this process) is refused
...         pass
Traceback (most recent call last):
...
vectorport.exceptions.ConflictError: ...
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType

from ...exceptions import ConflictError
from ._format import LOCK

__all__ = ["WriteLock"]

_THREADS: dict[str, threading.Lock] = {}
_THREADS_LOCK = threading.Lock()


def _thread_lock(directory: Path) -> threading.Lock:
    key = os.path.realpath(directory)
    with _THREADS_LOCK:
        return _THREADS.setdefault(key, threading.Lock())


class WriteLock:
    """Hold the snapshot directory's write lock inside a ``with`` block (the directory exists).
    ``wait``: queue behind other threads of this process (the default); another process holding
    the lock is always refused."""

    def __init__(self, directory: Path, *, wait: bool = True) -> None:
        self.directory = directory
        self.wait = wait
        self._thread = _thread_lock(directory)
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        if not self._thread.acquire(blocking=self.wait):
            raise self._held("a thread of this process")
        try:
            self._fd = self._take()
        except BaseException:
            self._thread.release()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
        finally:
            self._fd = None
            self._thread.release()

    def _take(self) -> int:
        path = self.directory / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip()
            os.close(fd)
            raise self._held(f"process {holder}" if holder.isdigit() else "another process") from None
        except OSError:
            os.close(fd)
            raise
        # the holder's pid, for another writer's error; padded in place (no truncate: a metadata
        # change that costs as much as the write itself on some file systems)
        os.pwrite(fd, str(os.getpid()).ljust(20).encode("ascii"), 0)
        return fd

    def _held(self, holder: str) -> ConflictError:
        return ConflictError(
            f"the parquet snapshot {self.directory} is being written by {holder} (it holds "
            f"{self.directory / LOCK}); nothing was written. One process writes a snapshot at a "
            "time: retry when that write is done (readers are not affected)"
        )
