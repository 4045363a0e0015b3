"""A whole command run as one task (:meth:`Runner.delegate <vectorport.engine.Runner.delegate>`):
for a store only one process may open (an embedded Chroma directory), which shard tasks could
not share. Every command reaches it through :func:`delegated`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._options import RunOptions
from .._report import Report
from ._progress import ProgressMode
from ._runner import Placement, Runner, worker_info

__all__ = ["delegated", "note_pid"]


def note_pid(shard: tuple[int, int]) -> None:
    """Write this task's pid as ``shard-I.pid`` into ``$VECTORPORT_RAY_PIDS`` when set: lets a
    test find (and kill) the process running a shard."""
    pid_dir = os.environ.get("VECTORPORT_RAY_PIDS")
    if pid_dir:
        Path(pid_dir, f"shard-{shard[0]}.pid").write_text(str(os.getpid()))


def _whole(
    command: Callable[..., Report],
    records: Callable[[Any], int],
    name: str,
    source: Any,
    target: Any,
    fields: dict[str, Any],
) -> tuple[Report, dict[str, Any]]:
    """The task: the command in one process, its report and where it ran."""
    started = time.monotonic()
    note_pid((0, 1))
    report = command(source, target, **fields)
    return report, worker_info(f"{name} 0/1", records(report), started) | {"shard": 0}


def delegated(
    runner: Runner,
    placement: Placement,
    command: Callable[..., Report],
    records: Callable[[Any], int],
    source: Any,
    target: Any,
    options: RunOptions,
) -> Report | None:
    """The command's report when the placement runs it whole as one task, else ``None`` (run
    it here). ``command(source, target, **options)`` is the command's own entry point and
    ``records(report)`` the records its report says it handled (for the task's rate)."""
    if not placement.whole:
        return None
    started = time.monotonic()
    fields = {f.name: getattr(options, f.name) for f in options.declared()}
    progress = ProgressMode.parse(getattr(options, "progress", None))
    args = (command, records, options.COMMAND, source, target, fields)
    report, worker = runner.delegate(_whole, args, progress)
    placement.ran([worker], time.monotonic() - started)
    note = (
        f"{', '.join(placement.whole)} can be opened by one process at a time: the whole "
        f"{options.COMMAND} ran as one {runner.name} task"
    )
    report.placed(placement.describe(), note)
    return report
