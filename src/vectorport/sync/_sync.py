"""``vectorport.sync()``: stages over one :class:`~._context.SyncContext`, written once for every
runner: open and create the target → decide the pass (capture or scan, full or incremental) →
the pass → status, notes and verification.

The pass is a capture pass (:mod:`._capture`: the source's change feed, read by one process) or
a scan pass (:mod:`._pass`), here on the run's state or, when the runner places it elsewhere, one
task per shard of the source (:mod:`._shards`), whose reports are folded into the run's. Two
things a shard cannot judge alone are decided before the shards run: creating the target, and
whether the target was changed outside sync (:func:`~._pass.outside_shards`, over every shard's
state).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._changes import ChangeFeed
from .._exit import Status
from .._models import JSON
from .._paths import default_state
from .._protocol import VectorStore
from .._report import Capped
from ..engine._checkpoint import shard_path
from ..engine._endpoints import StoreLike
from ..engine._progress import ProgressMode
from ..engine._runner import LocalRunner, Runner
from ..engine._whole import delegated
from ..exceptions import Action, Advice, Advised, Call, ConfigurationError, Step
from ..verify._placed import Pair, verify_placed
from ..verify._verify import VerifyReport
from ._capture import (
    CaptureRun,
    Lag,
    Reshaped,
    check_follow,
    feed_of,
    follow_until,
    mark,
    ready,
    reshaped,
    trim_scanned,
)
from ._context import SyncContext, check_spec, opened
from ._lease import Lease, handover
from ._options import SyncOptions
from ._pass import outside, outside_shards, scan_pass
from ._report import SyncReport, SyncStats
from ._shards import merge_shards, shard_passes
from ._state import SyncState, recorded_fixed

__all__ = ["sync"]


def _capture_run(ctx: SyncContext, feed: ChangeFeed) -> CaptureRun:
    assert ctx.state is not None
    o = ctx.options
    # a capture batch is bounded already (READ_LIMIT changes): unless batch_size says otherwise
    # it is written in the fewest calls the target takes, as each call has a fixed cost (an
    # embedded Chroma's ~0.1 s log transaction and compaction: one add of 4,000 records is 1.2x
    # faster than 4 of 1,000 side by side, measured)
    most = ctx.dst.capabilities.max_write_batch
    return CaptureRun(
        ctx.src.store,
        ctx.dst.store,
        ctx.state,
        ctx.transformer,
        ctx.report.sync,
        feed,
        delete=o.delete,
        batch_size=min(o.batch_size or most, most),
        retry=o.retry,
        concurrency=o.concurrency,
        prepare=ctx.prepare,
    )


def _capture_pass(ctx: SyncContext, feed: ChangeFeed, on_lag: Callable[[Lag], None] | None) -> CaptureRun:
    """A pass that applies what the source captured since the last one (no scan)."""
    assert ctx.state is not None
    stats = ctx.report.sync
    stats.mode, stats.bins = "capture", ctx.state.parts or 0
    ctx.report.notes.append(f"applied the changes captured by the source ({feed.kind} {feed.name})")
    t0 = time.monotonic()
    run = _capture_run(ctx, feed)
    run.drain(on_lag)
    ctx.report.timings["capture"] = time.monotonic() - t0
    ctx.state.put("last", {"finished": time.time(), **stats.to_dict()})
    ctx.state.commit()
    return run


def sync(
    source: StoreLike,
    target: StoreLike,
    *,
    runner: Runner | None = None,
    on_lag: Callable[[Lag], None] | None = None,
    **options: Any,
) -> SyncReport:
    """Bring ``target`` to ``source``'s current state: copy new and changed records and, with
    ``delete=True``, delete the records gone from the source. Return a report.

    ``source``, ``target``: store URLs or stores, as for :func:`vectorport.migrate.run`; the
    target is created with the source's spec when missing. ``options`` are the fields of
    :class:`~vectorport.migrate.SyncOptions`, each documented there (``delete``, ``full``,
    ``state``: the SQLite state file that records what the target holds and that an
    interrupted pass continues from, one per source and target; default
    :func:`vectorport._paths.default_state`, the file ``vectorport sync`` uses for the same
    URLs; ``shard``, ``verify``, ``follow``, ``until_equal``, …). ``runner``:
    where the passes run (default: threads in this process; :class:`vectorport.ray.RayRunner`:
    one Ray task per shard, each with its own state). ``on_lag`` is called with a
    :class:`~._capture.Lag` after each read of the change feed.

    A source with change capture installed (see :mod:`._capture`) is not scanned: a pass
    applies what it captured since the last pass, once a first pass recorded the target.

    >>> import vectorport
    >>> src = vectorport.connect("memory://doctest-sync-src", dimension=2)
    >>> _ = src.upsert([vectorport.Record(f"doc#{i}", [1.0, i], {"i": i}) for i in range(5)])
    >>> import tempfile, os; st = os.path.join(tempfile.mkdtemp(), "state.sqlite")
    >>> r = vectorport.sync("memory://doctest-sync-src", "memory://doctest-sync-dst", state=st)
    >>> r.sync.mode, r.sync.new
    ('full', 5)
    >>> _ = src.upsert([vectorport.Record("doc#1", [0.5, 1.0], {"i": 1})]); _ = src.delete(["doc#4"])
    >>> r = vectorport.sync("memory://doctest-sync-src", "memory://doctest-sync-dst", state=st, delete=True)
    >>> r.sync.mode, r.sync.changed, r.sync.deleted, r.sync.target_read, r.exit_code
    ('incremental', 1, 1, 0, <ExitCode.OK: 0>)
    >>> src.drop(); vectorport.connect("memory://doctest-sync-dst").drop()
    """
    opts = SyncOptions(**options)
    run = runner if runner is not None else LocalRunner()
    placement = run.check(opts, source, target)
    if opts.state is None and isinstance(source, str) and isinstance(target, str):
        opts = replace(opts, state=default_state(source, target))  # the same file wherever it runs
    whole = delegated(run, placement, sync, _records_read, source, target, opts)
    if whole is not None:
        assert isinstance(whole, SyncReport)
        return whole
    with opened(source, target, opts, opts.shard, placement) as ctx, _feed(ctx) as feed:
        ctx.report.engine = placement.describe()
        _check_fixed(ctx)
        check_spec(ctx.src, ctx.dst, ctx.embedder)  # creates a missing target: after every refusal above
        _passes(ctx, run, feed, on_lag)
        _finish(ctx, run)
        return ctx.report


def _records_read(report: SyncReport) -> int:
    return report.sync.source_read


def verify_sync(ctx: SyncContext, runner: Runner, progress: ProgressMode) -> VerifyReport:
    """Compare a sync's target with its source, under the run's placement."""
    pair = Pair(ctx.source, ctx.target, ctx.src, ctx.dst, ctx.transformer, ctx.segment)
    return verify_placed(runner, ctx.placement, pair, ctx.options, progress=progress)


def _finish(ctx: SyncContext, runner: Runner) -> None:
    """Status and notes, then the verification asked for: the end of every run, under every runner."""
    report = ctx.report
    report.sync.seconds = time.monotonic() - ctx.started
    if ctx.state is not None:
        _held_back(ctx.state, report.sync)
    report.conclude()
    if ctx.options.verify and report.verification is None:
        t0 = time.monotonic()
        report.verified(verify_sync(ctx, runner, ctx.options.progress))
        report.timings["verify"] = time.monotonic() - t0
    elif report.verification is not None and report.status == Status.SYNCED:
        report.status = report.verification.status
    report.engine = ctx.placement.describe()
    report.timings["total"] = time.monotonic() - ctx.started


def _held_back(state: SyncState, stats: SyncStats) -> None:
    """The records the target cannot hold, as the state holds them back: those this pass found
    and those earlier passes did that no change since released (a capture pass reads only the
    changed keys, and must not call the target synced over the others)."""
    unwritable: Capped[dict[str, JSON]] = Capped(cap=stats.unwritable.cap)
    for key, problems in state.held():
        unwritable.add({"key": key, "problems": list(problems)})
    stats.unwritable = unwritable


def _check_fixed(ctx: SyncContext) -> None:
    """Refuse, before anything is written, a run whose fixed options (the metadata policy, the
    text key) differ from those the target was synced with, as recorded in the state of each of
    the runner's shards: the rule a migration's checkpoint keeps. ``full`` may change them (its
    pass compares and rewrites every record)."""
    if ctx.options.full or ctx.report.state is None:
        return
    base = Path(ctx.report.state)
    n = ctx.placement.shards
    paths = [base] if ctx.placement.here else [shard_path(base, (i, n)) for i in range(n)]
    for path in paths:
        recorded = recorded_fixed(path)
        if recorded is not None:
            # another model is no refusal: the pass is a full one, named so (scan_pass)
            ctx.options.check_fixed(
                {name: value for name, value in recorded.items() if name != "reembed"},
                "sync state",
                path,
                Advised.of(
                    "sync with the values it records, or pass {} to rewrite the target with the new ones "
                    "(a full pass), or another {} path",
                    Advice("full", True),
                    Advice("state"),
                ),
            )


@contextmanager
def _feed(ctx: SyncContext) -> Iterator[ChangeFeed | None]:
    """The source's change feed when this process runs the whole pass (one reader of one
    stream), closed after the run; ``follow`` needs one. Opened before anything is written: a
    refused ``follow`` leaves the target as it was (not created)."""
    feed = feed_of(ctx.src.store, ctx.segment) if ctx.state is not None else None
    try:
        ours = _claimed(ctx, feed) if feed is not None else None
        _check_feed(ctx, ours)
        yield ours
    finally:
        if feed is not None:
            feed.close()


def _claimed(ctx: SyncContext, feed: ChangeFeed) -> ChangeFeed | None:
    """The feed, claimed for this target; ``None`` when it feeds another target (one capture
    feeds one target: this pass scans), refused under ``follow``."""
    owner = feed.claim(ctx.dst.label)
    if owner is None:
        return feed
    if ctx.options.follow:
        raise ConfigurationError(
            f"{ctx.src.label}: its change capture ({feed.kind} {feed.name}) feeds the sync into "
            f"{owner}, and one capture feeds one target (each confirms the changes it applied, so a "
            f"second follower would lose them): follow {owner} only, and keep {ctx.dst.label} in "
            "step with passes that scan (sync without follow), or sync it from that target; see "
            "'Two targets' in docs/sync.md"
        )
    ctx.report.notes.append(
        f"the source's change capture feeds the sync into {owner} (one capture feeds one target): "
        "this pass scanned the source"
    )
    return None


def _check_feed(ctx: SyncContext, feed: ChangeFeed | None) -> None:
    """Refuse ``follow`` without a feed; note a feed the runner's shards cannot read."""
    if ctx.state is None and _captures(ctx.src.store):
        ctx.report.notes.append(
            "the source captures its changes, but a change feed is one stream read by one process: "
            "the runner's shards scanned the source instead (engine local applies the captured changes)"
        )
    if ctx.options.follow:
        check_follow(ctx.src.store, ctx.src.label)
        took = handover(ctx.state.path) if ctx.state is not None else None
        if took is not None:
            raise ConfigurationError(
                Advised.of(
                    "{} is written by {} since {} (it took the target over from this sync's follower): "
                    "a follower of {} would write that store's changes into it. To follow again, "
                    "make it a capture-fed candidate (`{}`) or pass another {} path",
                    ctx.dst.label,
                    took.get("by"),
                    time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(str(took.get("at", 0))))),
                    ctx.src.label,
                    Call("alias shadow", ("NAME", ctx.dst.label), (Advice("feed", "capture"),)),
                    Advice("state"),
                )
            )
        if feed is None:
            raise ConfigurationError(
                Advised.of(
                    "{} has no change capture installed, so {} has nothing to read: {}",
                    ctx.src.label,
                    Advice("follow", True),
                    Step(Action.SETUP_CAPTURE, ctx.src.label),
                )
            )


def _captures(store: VectorStore) -> bool:
    """Whether the source has change capture installed."""
    feed = feed_of(store)
    if feed is None:
        return False
    feed.close()
    return True


def _passes(
    ctx: SyncContext, runner: Runner, feed: ChangeFeed | None, on_lag: Callable[[Lag], None] | None
) -> None:
    """The pass (or passes) one call runs: a capture pass when the source captures its changes
    and the state can go on from them, else a scan pass by every shard of the runner; then, with
    ``follow``, changes as they come, and with ``until_equal``, passes until the target
    verifies equal. A follower holds a lease beside its state (:mod:`._lease`): a heartbeat at
    each read of the feed, and it stops once another writer took its target over."""
    o = ctx.options
    if o.follow and feed is not None and ctx.state is not None:
        with Lease(ctx.state.path, o.poll) as lease:  # status and alias switch see it run
            _rounds(ctx, runner, feed, _beating(lease, on_lag), lease.handed_over)
            took = handover(ctx.state.path)
            if took is not None:
                ctx.report.notes.append(
                    f"the follower stopped: {took.get('by')} took over writing {ctx.dst.label}"
                )
        return
    _rounds(ctx, runner, feed, on_lag, None)


def _beating(lease: Lease, on_lag: Callable[[Lag], None] | None) -> Callable[[Lag], None]:
    def beat(lag: Lag) -> None:
        lease.beat(lag)
        if on_lag is not None:
            on_lag(lag)

    return beat


def _rounds(
    ctx: SyncContext,
    runner: Runner,
    feed: ChangeFeed | None,
    on_lag: Callable[[Lag], None] | None,
    stop: Callable[[], bool] | None,
) -> None:
    """Passes until the run is done (see :func:`_passes`)."""
    o = ctx.options
    transform = o.fixed()
    why = "asked for (full)" if o.full else None
    until = (lambda: _equal(ctx, runner)) if o.until_equal else None
    while True:
        capture = _capture_if_ready(ctx, feed, transform, why, on_lag)
        if capture is None:
            _scan_passes(ctx, runner, transform, why, feed)
        why = None
        if o.follow and feed is not None:
            try:
                follow_until(
                    capture or _capture_run(ctx, feed),
                    poll=o.poll,
                    on_lag=on_lag,
                    caught_up=until,
                    max_outage=o.max_outage,
                    stop=stop,
                )
            except Reshaped:
                continue  # the next round scans (its notes say why), then follows again
            return
        if until is None or until():
            return
        time.sleep(o.poll)


def _capture_if_ready(
    ctx: SyncContext,
    feed: ChangeFeed | None,
    transform: JSON,
    why: str | None,
    on_lag: Callable[[Lag], None] | None,
) -> CaptureRun | None:
    """The capture pass, when the state can go on from the feed (else ``None``: scan)."""
    if feed is None or why is not None or ctx.state is None:
        return None
    if outside(ctx.state, ctx.dst, ctx.segment) is not None or ctx.state.get("transform") != transform:
        return None
    if not ready(ctx.state, feed):
        if reshaped(ctx.state, feed):
            ctx.report.notes.append(
                "the source table's columns changed since the last pass (records changed with no "
                "captured change): this pass scanned the source"
            )
        return None
    return _capture_pass(ctx, feed, on_lag)


def _scan_passes(
    ctx: SyncContext, runner: Runner, transform: JSON, why: str | None, feed: ChangeFeed | None
) -> None:
    """A scan pass by each of the runner's shards. Whether the target was changed outside sync
    is judged here over every shard's state when there are several (none can alone)."""
    n = ctx.placement.shards
    if why is None and n > 1 and ctx.report.state is not None:
        why = outside_shards(ctx.report.state, ctx.dst, n)
    t0 = time.monotonic()
    if ctx.placement.here:
        scan_pass(ctx, transform, why, mark(feed) if feed is not None else None)
    else:
        merge_shards(ctx.report, shard_passes(runner, ctx, why), time.monotonic() - t0)
    if feed is not None and ctx.state is not None:
        trim_scanned(ctx.state, feed)


def _equal(ctx: SyncContext, runner: Runner) -> bool:
    """``until_equal``: verify the target; whether the data is equal (the report keeps the
    verification)."""
    check = ctx.report.verification = verify_sync(ctx, runner, ProgressMode.NONE)
    if check.status != Status.DIFFERENCES:
        return True
    # equal but for the records held back: no pass can change that, the report names them
    held = {key for key, _ in ctx.state.held()} if ctx.state is not None else set()
    only_missing = check.differences == check.missing.total + int(check.count_mismatch)
    return (
        bool(held)
        and only_missing
        and check.missing.total == len(held) >= len(held.union(check.missing.items))
    )
