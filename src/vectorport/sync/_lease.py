"""A follower's lease: a running ``sync --follow`` tells other processes that it runs and how
far behind it is, and stops when another writer takes over its target.

Two small JSON files beside the sync state (never in the state's SQLite file itself: a write
there by another process would break the follower's open transaction):

``STATE.follower``
    rewritten (atomically) by the follower at each read of the change feed: its pid and host,
    when it started, the heartbeat's time, its :class:`~._capture.Lag` and the time before
    which every committed change is applied (caught up); the time it stopped, and why.
``STATE.handover``
    written by whoever takes over feeding the target (``vectorport alias switch`` makes the
    target dual-written by the alias): the follower stops at its next read of the feed, and
    ``follow`` on this state is refused while the file is there (a follower of the old source
    would write its changes into a store the alias now serves). :func:`take_back` removes it.

A follower on this host is running while its pid is alive (however long a batch takes); one on
another host while its heartbeat is at most :data:`SILENCE` seconds late.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .._models import JSON
from ._capture import Lag

__all__ = ["SILENCE", "Follower", "Lease", "follower", "hand_over", "handover", "take_back"]

SILENCE = 30.0
"""Seconds past its announced next heartbeat after which a follower on another host counts as gone."""
_FOLLOWER, _HANDOVER = ".follower", ".handover"


def _beside(state: str | os.PathLike[str], suffix: str) -> Path:
    path = Path(state)
    return path.with_name(path.name + suffix)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


@dataclass(frozen=True)
class Follower:
    """What the lease of a ``sync --follow`` says, as last written."""

    pid: int
    host: str
    started: float
    beat: float
    """The heartbeat: when the follower last read its change feed."""
    next_by: float
    """When the follower expects to beat again (poll interval after the latest one)."""
    lag_seconds: float
    behind: int
    applied: int
    position: str | None
    caught_up: float | None
    """Every change committed before this time is applied (the read time of the latest batch
    that held all the feed had, once applied), or ``None``."""
    stopped: float | None = None
    why: str | None = None
    """Why it stopped (``handed over …``, ``interrupted``, an error)."""

    @property
    def running(self) -> bool:
        """Whether the follower still runs (see the module docstring)."""
        if self.stopped is not None:
            return False
        if self.host == socket.gethostname():
            return _alive(self.pid)
        return time.time() <= self.next_by + SILENCE

    def caught_up_since(self, when: float) -> bool:
        """Whether every change committed before ``when`` is applied."""
        return self.caught_up is not None and self.caught_up >= when

    def to_dict(self) -> dict[str, JSON]:
        return {**asdict(self), "running": self.running}

    def describe(self, now: float | None = None) -> str:
        """One line for people: who, and how far behind."""
        ago = (now or time.time()) - self.beat
        who = f"pid {self.pid} on {self.host}"
        if not self.running:
            when = time.strftime("%H:%M:%S", time.localtime(self.stopped or self.beat))
            return f"{who}: stopped at {when} ({self.why or 'gone without a word: killed'})"
        if self.caught_up is None and self.behind == 0:
            lag = "no read of the change feed yet (a first pass runs)"
        elif self.caught_up is not None and self.beat - self.caught_up < 2 * (self.next_by - self.beat) + 1:
            lag = f"caught up (lag {self.lag_seconds:.1f} s at the last read)"
        else:
            lag = f"{self.behind} changes behind, lag {self.lag_seconds:.1f} s"
        return f"{who}: running, {lag}, {self.applied} changes applied, last heard {ago:.1f} s ago"


def follower(state: str | os.PathLike[str]) -> Follower | None:
    """The lease of the follower of the sync state ``state`` (``None``: none has run on it)."""
    try:
        data: dict[str, Any] = json.loads(_beside(state, _FOLLOWER).read_text(encoding="utf-8"))
        return Follower(**data)
    except (OSError, ValueError, TypeError):
        return None


def handover(state: str | os.PathLike[str]) -> dict[str, JSON] | None:
    """Who took over the target of the sync state ``state`` (``{"by": …, "at": …}``), or ``None``."""
    try:
        data = json.loads(_beside(state, _HANDOVER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def hand_over(state: str | os.PathLike[str], by: str) -> None:
    """Take the target of ``state`` over from its follower: it stops at its next read of the feed,
    and no follower starts on ``state`` until :func:`take_back`."""
    _write(_beside(state, _HANDOVER), {"by": by, "at": time.time()})


def take_back(state: str | os.PathLike[str]) -> None:
    """Let a follower run on ``state`` again (a new capture-fed candidate)."""
    _beside(state, _HANDOVER).unlink(missing_ok=True)


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the old beat or the new one, never half of one


class Lease:
    """The running follower's side: :meth:`beat` at each read of the feed, :meth:`handed_over`
    to know it must stop, :meth:`release` when it ends (a context manager)."""

    def __init__(self, state: str | os.PathLike[str], poll: float) -> None:
        self.state = state
        self.path = _beside(state, _FOLLOWER)
        self.poll = poll
        now = time.time()
        self.current = Follower(
            os.getpid(), socket.gethostname(), now, now, now + poll, 0.0, 0, 0, None, None
        )
        _write(self.path, asdict(self.current))

    def beat(self, lag: Lag) -> None:
        """Record one read of the feed, once its batch is applied."""
        now = time.time()
        self.current = replace(
            self.current,
            beat=now,
            next_by=now + self.poll,
            lag_seconds=lag.seconds,
            behind=lag.behind,
            applied=lag.applied,
            position=lag.position,
            caught_up=lag.read_at if lag.complete else self.current.caught_up,
        )
        with contextlib.suppress(OSError):  # a full disk must not stop the follower
            _write(self.path, asdict(self.current))

    def handed_over(self) -> bool:
        """Whether another writer took the target over (the follower stops)."""
        return _beside(self.state, _HANDOVER).exists()

    def release(self, why: str) -> None:
        self.current = replace(self.current, stopped=time.time(), why=why)
        with contextlib.suppress(OSError):
            _write(self.path, asdict(self.current))

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if kind is None:
            took = handover(self.state)
            self.release(f"handed over to {took.get('by')}" if took else "caught up and done")
        elif issubclass(kind, KeyboardInterrupt):
            self.release("interrupted")
        else:
            self.release(f"{kind.__name__}: {exc}")
