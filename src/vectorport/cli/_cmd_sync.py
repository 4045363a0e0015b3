"""``vectorport sync SRC DST``: keep a live source and its new home in step until the cut-over.

Exit codes, from :class:`vectorport._exit.ExitCode` (the same table as ``migrate``):

* 0 ``OK`` — the target holds the source's current state (``--verify``: and verified equal)
* 1 ``PROBLEM`` — ``--verify`` found data differences, or some source records have metadata the
  target cannot hold under the metadata policy (the rest was synced)
* 2 ``USAGE`` — a malformed command line (``--every`` that is not a duration), a bad URL, option
  or state file (``--every`` stops: every pass would fail alike)
* 3 ``FAILURE`` — operational failure: a backend error; what was committed is kept in the
  state, and the same command continues the pass
* 5 ``QUALITY`` — ``--verify``: the data is equal, search quality on sampled queries is not

With ``--every``, the command runs a pass, waits, and runs the next until stopped (Ctrl-C); a pass
that fails is reported and the next one runs on time. The exit code is the last pass's. ``--json``
writes JSON Lines: one compact report per pass.

The flags of the sync options are derived from :class:`vectorport.migrate.SyncOptions`
(:mod:`._options`). With ``--engine ray`` each pass runs as ``--workers`` Ray tasks
(:class:`vectorport.ray.RayRunner`), one per shard of the source, each with its state beside
``--state``; same options, report and exit codes.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from .._exit import ExitCode
from .._registry import open_unbound
from ..engine._progress import ProgressMode, emit_progress
from ..exceptions import ConfigurationError, VectorportError
from ..migrate import SyncOptions, SyncReport, parse_shard, shard_path
from ..migrate import sync as run_sync
from ..sync._capture import Lag
from ..sync._report import SyncStats
from ..sync._state import committed
from ._cmd_migrate import SHOWN, _print_verification, resume_command
from ._common import (
    JsonOption,
    ReportOption,
    cli_text,
    cli_words,
    emit_json,
    err_console,
    fail,
    out_console,
    write_report,
)
from ._engine import AddressOption, Engine, EngineOption, WorkersOption, print_workers, runner
from ._options import with_options
from ._state import default_state

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_every(value: str) -> float:
    """``90``, ``30s``, ``10m``, ``2h``, ``1d`` → seconds (at least 1)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", value)
    if not match or float(match.group(1)) <= 0:
        raise typer.BadParameter(f"--every takes a duration such as 30s, 10m or 2h, got {value!r}")
    return max(1.0, float(match.group(1)) * _UNITS[match.group(2) or "s"])


def _bins_read(s: SyncStats) -> str:
    """Which key bins the scan read, when it read fewer than all (a source with per-bin digests)."""
    if s.mode == "capture" or s.bins_read >= s.bins:
        return ""
    return f" (in {s.bins_read:,} of {s.bins:,} key bins)"


def _print_report(report: SyncReport) -> None:
    s = report.sync
    out_console.print(
        f"sync ({s.mode}): read {s.source_read:,} source records{_bins_read(s)} and {s.target_read:,} "
        "target records; "
        f"{s.new:,} new, {s.changed:,} changed, {s.unchanged:,} unchanged; wrote {s.written:,} in "
        f"{s.seconds:.1f}s ({s.retries} retries)",
        highlight=False,
    )
    gone = f"{s.gone:,} in the target are not in the source"
    if s.gone:
        gone += f": deleted {s.deleted:,}" if report.delete else " (pass --delete to delete them)"
    out_console.print(
        f"{gone}; {s.bins_checked:,} of {s.bins:,} key bins differed after the scan", highlight=False
    )
    for item in s.unwritable.items[:SHOWN]:
        out_console.print(
            f"  not written: {item['key']!r}: {item['problems']}", highlight=False, markup=False
        )
    for note in report.notes:
        out_console.print(f"note: {cli_text(note)}", highlight=False, markup=False)
    if report.verification is not None:
        _print_verification(report.verification)
    print_workers(report.to_dict())
    out_console.print(f"state: {report.state}", highlight=False, markup=False)
    out_console.print(f"status: [bold]{report.status}[/bold] (exit {int(report.exit_code)})")


def _interrupted(state: Path, shards: list[tuple[int, int]]) -> None:
    paths = [shard_path(state, shard) for shard in shards]
    running = [r for r in map(committed, paths) if r is not None]
    if running:
        done = sum(int(r.get("committed_read") or 0) for r in running)
        written = sum(int(r.get("committed_written") or 0) for r in running)
        phases = sorted({str(r.get("phase")) for r in running})
        what = (
            f"{done:,} source records compared and {written:,} written"
            if phases == ["scan"]
            else f"phase {', '.join(phases)}"
        )
        err_console.print(f"interrupted: committed {what} in this pass", highlight=False, markup=False)
    else:
        err_console.print("interrupted: no pass was left unfinished", highlight=False, markup=False)
    err_console.print(f"state: {state}", highlight=False, markup=False, soft_wrap=True)
    command = resume_command(sys.argv[1:], [("--state", str(state))])
    err_console.print(f"resume: {command}", highlight=False, markup=False, soft_wrap=True)


SYNC_FLAGS = {"sample_queries": "--queries", "k": "-k"}
"""The flags whose name is not the option's own (``batch_size`` is ``--batch-size``)."""


@dataclass
class _Command:
    """What the command line adds around the library's passes: where they run, how often, and
    where the reports go."""

    source: str
    target: str
    engine: Engine
    workers: int
    address: str | None
    report_path: Path | None
    as_json: bool

    def once(self, options: dict[str, Any]) -> ExitCode:
        """One pass (Ctrl-C: what it committed and how to resume); its exit code."""
        follow, mode = options["follow"], options["progress"]
        on_lag = _LagPrinter(self.as_json, follow, mode) if follow or mode is ProgressMode.JSON else None
        try:
            run = runner(self.engine, self.workers, self.address)
            report = run_sync(self.source, self.target, runner=run, on_lag=on_lag, **options)
        except KeyboardInterrupt:
            n = self.workers if self.engine is Engine.ray else 1
            shards = [(i, n) for i in range(n)] if n > 1 else [parse_shard(options["shard"])]
            _interrupted(Path(options["state"]), shards)
            raise typer.Exit(ExitCode.INTERRUPTED) from None
        data = cli_words(report.to_dict())
        write_report(self.report_path, data)
        if self.as_json:  # JSON Lines: one line per pass, so `sync --json >> log` stays parseable
            emit_json(data, line=True)
        else:
            _print_report(report)
        return report.exit_code

    def every(self, interval: float | None, runs: int | None, options: dict[str, Any]) -> ExitCode:
        """The passes: one, or one every ``interval`` seconds (``runs`` of them, or until
        stopped); a pass that fails operationally is reported and the next one runs on time."""
        passes, code = 0, ExitCode.OK
        while True:
            passes += 1
            started = time.monotonic()
            try:
                code = self.once({**options, "full": options["full"] and passes == 1})
            except VectorportError as exc:
                error = fail(exc)
                # a bad URL or option fails every pass alike: stop; a backend failure may pass
                if interval is None or error.exit_code == ExitCode.USAGE:
                    raise error from None
                code = ExitCode(error.exit_code)
            if interval is None or (runs is not None and passes >= runs):
                return code
            wait = max(0.0, interval - (time.monotonic() - started))
            err_console.print(f"next sync in {wait:.0f}s (Ctrl-C to stop)", highlight=False)
            try:
                time.sleep(wait)
            except KeyboardInterrupt:
                return code


EveryOption = Annotated[
    str | None,
    typer.Option(
        "--every", metavar="DURATION", help="Run again every DURATION (30s, 10m, 2h) until stopped."
    ),
]
RunsOption = Annotated[
    int | None, typer.Option("--runs", min=1, help="With --every: stop after this many passes.")
]
SetupOption = Annotated[
    bool, typer.Option("--setup-capture", help="Install change capture on SOURCE (pgvector) and exit.")
]
TeardownOption = Annotated[
    bool,
    typer.Option("--teardown-capture", help="Remove SOURCE's change capture (slot, publication, trigger)."),
]
MethodOption = Annotated[
    str, typer.Option("--capture", metavar="METHOD", help="With --setup-capture: auto, slot or outbox.")
]


@with_options(SyncOptions, SYNC_FLAGS, {"progress": None})
def sync(
    source: Annotated[str, typer.Argument(help="Source store URL (the live store).")],
    target: Annotated[
        str | None, typer.Argument(help="Target store URL (created with the source's spec if missing).")
    ] = None,
    every: EveryOption = None,
    runs: RunsOption = None,
    report_path: ReportOption = None,
    as_json: bool = JsonOption,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    setup_capture: SetupOption = False,
    teardown_capture: TeardownOption = False,
    capture_method: MethodOption = "auto",
    *,
    options: dict[str, Any],
) -> None:
    """Bring TARGET to SOURCE's current state: copy new and changed records (--delete: delete gone ones).

    Only changes are written: each record's content digest is compared with the one the state
    file recorded for the target, so the target is not read (the first sync of a pair reads it
    once). An interrupted pass continues at the next run. The state lives under
    VECTORPORT_STATE_DIR (default ~/.local/state/vectorport). With --engine ray each pass runs
    as --workers Ray tasks, one per shard of the source, each keeping its state beside --state
    (put it on storage every node sees). Exit 0 ok, 1 differences or unwritable records, 3
    failure, 5 search quality.

    A PostgreSQL source can capture its changes (--setup-capture: a logical replication slot,
    or a trigger-fed outbox table where the role may not create slots): passes then apply what
    was captured instead of scanning, and --follow applies changes continuously, reporting the
    lag. --teardown-capture removes everything it installed. See docs/sync.md.
    """
    if setup_capture and teardown_capture:
        raise typer.BadParameter("--setup-capture and --teardown-capture undo each other: give one")
    if setup_capture or teardown_capture:
        _capture_command(source, setup=setup_capture, method=capture_method, as_json=as_json)
        return
    if target is None:
        raise typer.BadParameter("give the TARGET store URL", param_hint="TARGET")
    if options["follow"] and every is not None:
        raise typer.BadParameter("--follow runs continuously: it takes no --every")
    interval = parse_every(every) if every is not None else None
    options["state"] = options["state"] or default_state(source, target)
    options["progress"] = ProgressMode.parse(
        sys.stderr.isatty() if options["progress"] is None else options["progress"]
    )
    command = _Command(source, target, engine, workers, address, report_path, as_json)
    code = command.every(interval, runs, options)
    if code != ExitCode.OK:
        raise typer.Exit(code)


_LOG_EVERY = 30.0
"""Seconds between two lag lines on a stderr that is no terminal, while the feed is behind."""


class _LagPrinter:
    """The lag of a change feed: with ``--progress json`` a ``vectorport.progress/1`` line on
    stderr per read (stage ``follow``, or ``capture`` for a pass's read); under ``--follow``
    also a ``vectorport.sync.lag/1`` line on stdout per read (``--json``), else a line on
    stderr at most once a second (and whenever it catches up); when stderr is no terminal (a CI
    log, journald) at most every :data:`_LOG_EVERY` seconds while behind and once when it
    catches up, not again while idle (a line twice a second flooded such logs)."""

    def __init__(self, as_json: bool, follow: bool = True, mode: ProgressMode = ProgressMode.NONE) -> None:
        self.as_json, self.follow, self.mode = as_json, follow, mode
        self.started = time.monotonic()
        self.last = 0.0
        self.idle = False

    def __call__(self, lag: Lag) -> None:
        if self.mode is ProgressMode.JSON:
            elapsed = time.monotonic() - self.started
            rate = lag.applied / elapsed if lag.applied and elapsed > 0 else None
            eta = lag.behind / rate if rate and lag.behind else (0.0 if not lag.behind else None)
            stage = "follow" if self.follow else "capture"
            emit_progress(stage, lag.applied, None, rate, eta, lag=round(lag.seconds, 3), behind=lag.behind)
        if not self.follow:
            return
        if self.as_json:
            event = {"event": "lag", "time": time.time(), **lag.to_dict()}
            emit_json(event, "vectorport.sync.lag/1", line=True)
            return
        if self.mode is ProgressMode.JSON:
            return
        now = time.monotonic()
        idle = lag.behind == 0
        live = err_console.is_terminal
        if idle == self.idle and (now - self.last < (1.0 if live else _LOG_EVERY) or (idle and not live)):
            return
        self.last, self.idle = now, idle
        err_console.print(
            f"follow: lag {lag.seconds:.1f}s, {lag.behind:,} changes behind, {lag.applied:,} applied, "
            f"position {lag.position}",
            highlight=False,
            markup=False,
        )


def _capture_command(source: str, *, setup: bool, method: str, as_json: bool) -> None:
    """``--setup-capture`` / ``--teardown-capture``."""
    from .. import connect
    from .._features import change_capture_of

    try:
        # teardown opens no collection: it must work once the table is gone
        store = connect(source) if setup else open_unbound(source)
        capture = change_capture_of(store)
        try:
            if capture is None:
                raise ConfigurationError(
                    f"{source}: {store.name} cannot capture its changes (only PostgreSQL sources "
                    "can); sync scans it instead: nothing to install"
                )
            if setup:
                done = capture.setup_capture(method)
                out: dict[str, Any] = {
                    "schema": "vectorport.sync.capture/1",
                    "source": store.url.masked,
                    "installed": done.method,
                    "name": done.name,
                    "reason": done.reason,
                    "created": done.created,
                }
                text = f"capture: {done.method} {done.name} on {store.url.masked}: {done.reason}"
                details = [f"  created {item}" for item in done.created]
            else:
                removed = capture.teardown_capture()
                out = {"schema": "vectorport.sync.capture/1", "source": store.url.masked, "removed": removed}
                text = f"capture removed from {store.url.masked}" if removed else "no capture was installed"
                details = [f"  removed {item}" for item in removed]
        finally:
            store.close()
    except VectorportError as exc:
        raise fail(exc) from None
    if as_json:
        emit_json(out)
        return
    for line in (text, *details):
        out_console.print(line, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("sync")(sync)
