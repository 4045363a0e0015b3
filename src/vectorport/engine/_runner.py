"""The runner seam: where a command's tasks run. A runner only places work.

::

    command (migrate, verify, sync, export, diff …)        runner
      │ placement = runner.check(options, source, target)   refuse before any I/O what it cannot
      │                                                     honour; say how the work is split
      │ placement.whole → runner.delegate(fn, args, …)      the whole command as one task elsewhere
      │ runner.map(fn, calls)                               fn(*call) for every call, each a task,
      ▼                                                     yielded as they finish

Every stage, check, transform, checkpoint, status and report belongs to the command; a runner
knows no command. :class:`LocalRunner` runs tasks on threads of this process;
:class:`vectorport.ray.RayRunner` runs them as Ray tasks. A third runner (a process pool, Dask)
writes the same three methods.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from .._features import write_cap_of
from .._options import RunOptions
from .._protocol import VectorStore
from ..exceptions import ConfigurationError
from ._endpoints import StoreLike
from ._progress import ProgressMode

__all__ = [
    "LocalRunner",
    "Placement",
    "Runner",
    "refuse_options",
    "worker_info",
]

T = TypeVar("T")
Opts = TypeVar("Opts", bound=RunOptions)


@dataclass
class Placement:
    """How a runner places one command run (its :meth:`Runner.check`), and what the placed tasks
    did (the report's ``engine`` section, :meth:`describe`)."""

    runner: str
    shards: int = 1
    """Shards the command's copy or pass is split into, one task each (1: one, on the run's own
    state)."""
    remote: bool = False
    """The tasks run in other processes (each opens its own stores from the URLs)."""
    whole: tuple[str, ...] = ()
    """Stores only one process may open (masked URLs): the whole command runs as one task
    (:meth:`Runner.delegate`)."""
    segments: int | None = None
    """Native scan segments a verification reads each store in (default: ``shards``)."""
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    seconds: float = 0.0
    write_rate_per_worker: float | None = None

    @property
    def here(self) -> bool:
        """Whether this process runs the work on the run's own state (not in shard tasks)."""
        return not self.remote

    def capped(self, store: VectorStore, options: Opts) -> Opts:
        """The options each task writes with: a per-index write cap divided among the shards."""
        cap = write_cap_of(store)
        if cap is None or not self.remote:
            return options
        self.write_rate_per_worker = cap / self.shards
        target = {**getattr(options, "target_options", {}), "write_rate": cap / self.shards}
        return replace(options, **{"target_options": target})

    def ran(self, workers: list[dict[str, Any]], seconds: float) -> None:
        """Record what the placed tasks did (their :func:`worker_info`), in task order."""
        self.per_worker = sorted(workers, key=lambda w: (int(w.get("shard", 0)), str(w["task"])))
        self.records = sum(int(w["records"]) for w in workers)
        self.seconds = seconds

    def describe(self) -> dict[str, Any]:
        """The report's ``engine`` section: the runner's name and, for tasks in other processes,
        the workers, the overall rate, each worker's write cap and each task's node, pid, rate."""
        if not self.remote:
            return {"engine": self.runner}
        return {
            "engine": self.runner,
            "workers": len(self.per_worker) if self.whole else self.shards,
            "records_per_second": round(self.records / self.seconds, 1) if self.seconds > 0 else None,
            "write_rate_per_worker": self.write_rate_per_worker,
            "per_worker": list(self.per_worker),
        }


class Runner(Protocol):
    """Where a command's tasks run; it decides placement and parallelism, never meaning."""

    name: str

    def check(self, options: RunOptions, source: StoreLike, target: StoreLike) -> Placement:
        """Refuse, before any I/O, what this runner cannot honour (options, stores); say how the
        command's work is split."""

    def delegate(self, fn: Callable[..., T], args: tuple[Any, ...], progress: ProgressMode) -> T:
        """``fn(*args)``: the whole command, run as one task (for a store one process may open),
        its progress shown here as the command would show it."""

    def map(self, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> Iterator[T]:
        """``fn(*call)`` for every call, each a task, yielded as they finish (in any order)."""


def refuse_options(options: RunOptions, runner: str) -> None:
    """Every option the runner cannot honour, named in one error before any I/O."""
    refused = options.refused_by(runner)
    if refused:
        names = ", ".join(refused)
        raise ConfigurationError(
            f"{names}: not supported by the {runner} runner (engine {runner}); nothing was read or "
            "written. Drop the option or run with engine local"
        )


def worker_info(task: str, records: int, started: float) -> dict[str, Any]:
    """Where a task ran and its rate (records over the seconds since ``started``)."""
    seconds = time.monotonic() - started
    return {
        "task": task,
        "node": socket.gethostname(),
        "pid": os.getpid(),
        "records": records,
        "seconds": round(seconds, 3),
        "records_per_second": round(records / seconds, 1) if seconds > 0 else None,
    }


class LocalRunner:
    """This process: a command's work on the run's own state, tasks on threads."""

    name = "local"

    def check(self, options: RunOptions, source: StoreLike, target: StoreLike) -> Placement:
        refuse_options(options, self.name)
        return Placement(self.name)

    def delegate(self, fn: Callable[..., T], args: tuple[Any, ...], progress: ProgressMode) -> T:
        return fn(*args)

    def map(self, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> Iterator[T]:
        if len(calls) <= 1:
            for call in calls:
                yield fn(*call)
            return
        with ThreadPoolExecutor(max_workers=min(len(calls), 8), thread_name_prefix="vectorport-task") as pool:
            for fut in as_completed([pool.submit(fn, *call) for call in calls]):
                yield fut.result()
