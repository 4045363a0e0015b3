"""``vectorport.sync()``: bring a target to its source's current state at the cost of the change.

One pass reads the whole source (backends keep no change log vectorport could trust), and
compares each record's content digest (:mod:`._digest`) with the digest the sync state
(:mod:`._syncstate`) records for the target: only new and changed records are written, and the
target is not read at all. Records gone from the source are found per key bin: after the scan,
a bin whose source digest equals the target's lost nothing; only the keys of the bins
that differ are looked up in the source. With ``delete`` they are deleted from the target,
without it they are counted.

A source that keeps the digest fold of each key bin (:attr:`~.._features.Feature.BIN_DIGESTS`:
a Parquet snapshot's manifest) is not read whole: an incremental pass compares its folds with
the state's and reads only the records of the bins that differ (``info["bins"]``, fixed when the
pass starts, so a resumed pass reads the same bins); the bins it skips hold what the target
holds, so their source fold is the target's and no record there is gone.

The first sync of a pair (or ``full=True``, or a target whose count no longer matches the
state) has nothing to trust yet: it reads the target record by record as verification does,
writes what differs and records the rest, so a sync after a migrate rewrites nothing.

A pass is resumable at any instant: the state commits its cursor behind the records the target
acknowledged, and a killed pass continues at the next call. See :mod:`._syncstate` for why a
kill never leaves a record the state believes and the target does not hold.

``shard=(i, n)`` restricts a pass to the source's native scan segment ``i`` of ``n`` (as
``migrate --shard``), with its own state file (:func:`~._checkpoint.shard_path`): n shards run
side by side and each keeps, resumes and finds deletions in its part of the key space alone.

:func:`sync` is stages over one :class:`SyncContext`, written once for every runner (the seam
of :mod:`._engine`): open and create the target → decide the pass (capture or scan, full or
incremental) → the pass → status, notes and verification. The runner only places the scan
pass (:meth:`~._engine.Runner.sync_passes`): :func:`scan_pass` here on the run's state, or one
:func:`sync_shard` per shard (Ray tasks), whose reports :func:`merge_shards` folds into the
run's. Two things a shard cannot judge alone are decided before the shards run: creating the
target, and whether the target was changed outside sync (:func:`outside_shards`, over every
shard's state).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._activity import listening
from .._changes import ChangeFeed
from .._digest import READ_RECORDS_PER_BIN, bin_count, bin_of, record_digest
from .._exit import Status
from .._features import Feature, bin_digests_of, bulk_load_of, split_replace_of
from .._gc import bulk_allocations
from .._models import JSON, Record, ScanPage
from .._paths import default_state
from .._protocol import VectorStore
from .._retry import RetryPolicy, retry_scope
from ..exceptions import ConfigurationError, ConflictError, TransientError
from ._capture import CaptureRun, Lag, check_follow, feed_of, follow_until, mark, ready, trim_scanned
from ._checkpoint import shard_path
from ._endpoints import Endpoint, StoreLike
from ._engine import DEFAULT_BATCH, LocalRunner, Runner, open_pair
from ._options import SyncOptions
from ._plan import planned_target_spec
from ._progress import Progress, ProgressMode
from ._run import IndexBar
from ._syncreport import SyncReport, SyncStats
from ._syncstate import SyncState, recorded, recorded_fixed
from ._transform import Transformer
from ._verify import VECTOR_TOLERANCE, same_content

__all__ = [
    "SyncContext",
    "merge_shards",
    "outside_shards",
    "scan_pass",
    "sync",
    "sync_shard",
]

log = logging.getLogger("vectorport.migrate")

COMMIT_INTERVAL = 0.5
"""Seconds between state commits while nothing is written (always committed before a write)."""
MAX_RESTARTS = 5
"""Source scans started again because the source moved under a positional cursor (Chroma)."""


class _SourceMoved(Exception):
    """The source scan's cursor no longer holds (records before it were deleted)."""


@dataclass
class _Page:
    """One source page on its way through a pass."""

    cursor: str | None
    rows: list[tuple[str, int, bytes]]
    """``(key, bin, digest)`` of every record of the page."""
    written: list[tuple[str, int, bytes]] = field(default_factory=list)
    futures: list[Future[None]] = field(default_factory=list)


class _Pass:
    """One sync pass over an opened source and target (see the module docstring)."""

    def __init__(
        self,
        src: Endpoint,
        dst: Endpoint,
        state: SyncState,
        transformer: Transformer,
        stats: SyncStats,
        *,
        delete: bool,
        batch_size: int,
        concurrency: int,
        retry: RetryPolicy | None,
        progress: ProgressMode | bool,
        shard: tuple[int, int] = (0, 1),
    ) -> None:
        self.source: VectorStore = src.store
        self.target: VectorStore = dst.store
        self.state = state
        self.transformer = transformer
        self.stats = stats
        self.delete = delete
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.retry = retry
        self.progress = progress
        self.shard = shard
        self.float_ulps = (
            self.source.capabilities.metadata.float_ulps + self.target.capabilities.metadata.float_ulps
        )
        self.info: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.last_commit = time.monotonic()

    # ------------------------------------------------------------ state
    def save(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_commit >= COMMIT_INTERVAL:
            self.state.put("pass", self.info)
            self.state.commit()
            self.last_commit = now

    # ------------------------------------------------------------ writes
    def _write(self, records: list[Record]) -> None:
        def count(exc: TransientError) -> None:
            with self.lock:
                self.stats.retries += 1

        with retry_scope(self.retry, on_retry=count):
            self.target.upsert(records)

    def _prepare(self, page: ScanPage) -> tuple[_Page, list[Record]]:
        """Transform and digest a page; the records to write (new or changed) and the page."""
        parts = self.state.parts or 1
        items: list[tuple[Record, int, bytes]] = []
        for rec in page:
            out = self.transformer.apply(rec.metadata, rec.text)
            seg = bin_of(rec.key, parts)
            if out.unresolved:
                self.stats.unwritable.add(
                    {"key": rec.key, "problems": [f"{p}: {m}" for p, m in out.unresolved]}
                )
                continue
            fixed = Record(rec.key, rec.vector, out.metadata, out.text)
            items.append((fixed, seg, record_digest(rec.key, rec.vector, out.metadata, out.text)))
        keys = [r.key for r, _, _ in items]
        changed: list[tuple[Record, int, bytes]] = []
        if self.info["mode"] == "full":
            found = {r.key: r for r in self.target.get(keys)} if keys else {}
            self.stats.target_read += len(found)
            for rec, seg, digest in items:
                got = found.get(rec.key)
                if got is None or not same_content(
                    rec, got, tolerance=VECTOR_TOLERANCE, float_ulps=self.float_ulps
                ):
                    changed.append((rec, seg, digest))
                    self._count_change(got is None)
        else:
            known = self.state.lookup(keys)
            for rec, seg, digest in items:
                prev = known.get(rec.key)
                if prev != digest:
                    changed.append((rec, seg, digest))
                    self._count_change(prev is None)
        self.stats.unchanged += len(items) - len(changed)
        result = _Page(page.cursor, [(r.key, seg, d) for r, seg, d in items])
        result.written = [(r.key, seg, d) for r, seg, d in changed]
        return result, [r for r, _, _ in changed]

    def _count_change(self, new: bool) -> None:
        if new:
            self.stats.new += 1
        else:
            self.stats.changed += 1

    def _apply(self, page: _Page, bar: Progress) -> None:
        """The target acknowledged every write of ``page``: record it and move the cursor."""
        for fut in page.futures:
            fut.result()
        self.state.record(page.written if self.info["mode"] == "incremental" else page.rows)
        for _, seg, digest in page.rows:
            self.state.source.add(seg, digest)
        self.stats.written += len(page.written)
        self.info["cursor"] = page.cursor
        self.info["committed_read"] = self.info.get("committed_read", 0) + len(page.rows)
        self.info["committed_written"] = self.info.get("committed_written", 0) + len(page.written)
        bar.advance(len(page.rows))
        self.save(force=page.cursor is None)

    # ------------------------------------------------------------ phases
    def scan(self) -> None:
        """Read the source from the pass's cursor, writing what differs."""
        total = self.info.get("expected")
        load: AbstractContextManager[None] = (
            bulk_load_of(self.target, total) if self.info.get("bulk") else nullcontext()
        )
        index_bar = IndexBar(self.progress)
        # every record is marked in the state before it is written: a target may replace in two steps
        with (
            listening(index_bar),
            index_bar,
            load,
            split_replace_of(self.target),
            Progress("sync", total, enabled=self.progress) as bar,
        ):
            while True:
                try:
                    self._scan_once(bar)
                    return
                except _SourceMoved as moved:
                    exc = moved.__cause__
                    if self.stats.restarts >= MAX_RESTARTS:
                        raise exc from None  # type: ignore[misc]
                    self.stats.restarts += 1
                    log.warning("sync: %s; reading the source again from the start", exc)
                    self.state.restart_source()
                    _seed_unread(self.state, self.info.get("bins"))
                    self.info["cursor"] = None
                    self.save(force=True)

    def _scan_once(self, bar: Progress) -> None:
        inflight: deque[_Page] = deque()
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="vectorport-sync")
        failed: BaseException | None = None
        try:
            pages = self._source_pages()
            while True:
                try:
                    page = next(pages)
                except StopIteration:
                    break
                except ConflictError as exc:
                    raise _SourceMoved(str(exc)) from exc
                self.stats.source_read += len(page)
                prepared, records = self._prepare(page)
                if records:
                    self.state.mark_unknown([(k, s) for k, s, _ in prepared.written])
                    self.save(force=True)  # the target changes only after the state says so
                    for start in range(0, len(records), self.batch_size):
                        chunk = records[start : start + self.batch_size]
                        prepared.futures.append(pool.submit(self._write, chunk))
                inflight.append(prepared)
                while inflight and (
                    len(inflight) > self.concurrency or all(f.done() for f in inflight[0].futures)
                ):
                    self._apply(inflight.popleft(), bar)
        except BaseException as exc:
            failed = exc
            raise
        finally:
            pool.shutdown(wait=True)
            # keep every page the target acknowledged, in order, up to the first failure
            while inflight:
                done = inflight.popleft()
                if any(f.exception() is not None for f in done.futures):
                    inflight.appendleft(done)
                    break
                self._apply(done, bar)
            self.save(force=True)
            if failed is None:
                for rest in inflight:
                    for fut in rest.futures:
                        fut.result()

    def _source_pages(self) -> Iterator[ScanPage]:
        """The source's pages from the pass's cursor: every record of the shard, or only those
        of the key bins the pass reads (``info["bins"]``, :func:`_bins_plan`)."""
        plan, cursor = self.info.get("bins"), self.info.get("cursor")
        include = ["vector", "metadata", "text"]
        if plan is None:
            pages = self.source.scan(
                batch_size=self.batch_size, include=include, segment=self.shard, cursor=cursor
            )
            return iter(pages)
        binned = bin_digests_of(self.source)
        assert binned is not None  # the plan was made from it
        return iter(
            binned.scan_bins(
                plan["parts"], plan["read"], batch_size=self.batch_size, include=include, cursor=cursor
            )
        )

    def extras(self) -> None:
        """Full pass: record the target's keys that no source record accounts for.

        A shard lists the target's own segment ``i`` of ``n``, which holds keys of every source
        shard: a key its state lacks may belong to another shard, so it is recorded only when
        the source does not hold it at all (each target key is judged by exactly one shard)."""
        known = self.state
        for page in self.target.scan(include=[], segment=self.shard, cursor=self.info.get("target_cursor")):
            keys = [r.key for r in page]
            self.stats.target_read += len(keys)
            have = known.lookup(keys)
            parts = known.parts or 1
            unknown = [k for k in keys if k not in have]
            if unknown and self.shard[1] > 1:
                held = {r.key for r in self.source.get(unknown, include=[])}
                self.stats.source_read += len(held)
                unknown = [k for k in unknown if k not in held]
            known.mark_unknown([(k, bin_of(k, parts)) for k in unknown])
            self.info["target_cursor"] = page.cursor
            self.save()
        self.save(force=True)

    def gone(self) -> None:
        """Find the records the target holds and the source no longer does, in the key bins
        whose digests differ; delete them when asked."""
        differing = self.state.source.differing(self.state.target)
        self.stats.bins_checked = len(differing)
        step = 64
        for start in range(0, len(differing), step):
            keys = self.state.keys_in(differing[start : start + step])
            if not keys:
                continue
            present = {r.key for r in self.source.get([k for k, _ in keys], include=[])}
            self.stats.source_read += len(present)
            gone = [(k, s) for k, s in keys if k not in present]
            self.stats.gone += len(gone)
            if not gone or not self.delete:
                continue
            self.state.mark_unknown(gone)
            self.save(force=True)
            with retry_scope(self.retry):
                self.target.delete([k for k, _ in gone])
            self.state.forget(gone)
            self.stats.deleted += len(gone)
            self.save(force=True)


def _check_spec(src: Endpoint, dst: Endpoint) -> None:
    if not dst.exists:
        dst.ensure(planned_target_spec(src.store.spec, dst, None, None))
        return
    a, b = src.store.spec, dst.store.spec
    if (a.dimension, a.metric) != (b.dimension, b.metric):
        raise ConfigurationError(
            f"the target {dst.label} holds {b.dimension}-dim {b.metric.value} vectors, the source "
            f"{src.label} {a.dimension}-dim {a.metric.value}: sync into a new collection"
        )


def _pair(
    source: StoreLike,
    target: StoreLike,
    source_options: Mapping[str, Any] | None,
    target_options: Mapping[str, Any] | None,
) -> tuple[Endpoint, Endpoint]:
    """Open both ends; refuse a target that is the source."""
    src, dst = open_pair(source, target, source_options, target_options)
    if src.identity == dst.identity:
        dst.close()
        src.close()
        raise ConfigurationError(
            f"the source and the target are the same collection ({src.label}); "
            "sync copies into another collection"
        )
    return src, dst


def _outside(state: SyncState, dst: Endpoint, shard: tuple[int, int]) -> str | None:
    """Why the target must be read again: it holds another count than the state records (it
    was changed outside sync); ``None`` when it does not, or cannot tell."""
    # a shard holds part of the target: its runner compares the sum (changed_outside)
    if shard[1] > 1 or Feature.NATIVE_COUNT not in dst.capabilities.features:
        return None
    held = dst.store.count()
    if held == state.records:
        return None
    return (
        f"the target holds {held} records, the sync state {state.records}: it was "
        "changed outside sync, so it is read again"
    )


def outside_shards(state: str | os.PathLike[str], dst: Endpoint, parts: int) -> str | None:
    """Why each of the ``parts`` shards of a sync must run a full pass: the target's count
    differs from the records all the shards' states hold (it was written outside sync). ``None``
    when it matches, when counting is not cheap (no ``native_count``), or when a shard has a
    first sync to run or a pass to continue (it decides for itself then)."""
    held = [recorded(shard_path(state, (i, parts))) for i in range(parts)]
    if any(h is None for h in held) or not dst.exists:
        return None
    if Feature.NATIVE_COUNT not in dst.capabilities.features:
        return None
    count, total = dst.store.count(), sum(h for h in held if h is not None)
    if count == total:
        return None
    return (
        f"the target holds {count} records, the sync states of its {parts} shards {total}: it was "
        "changed outside sync, so it is read again"
    )


def _start(
    state: SyncState,
    src: Endpoint,
    dst: Endpoint,
    transform: JSON,
    full: str | None,
    shard: tuple[int, int],
) -> tuple[dict[str, Any], str | None, bool]:
    """The pass to run: the interrupted one (resumed), or a new one (``full`` and why, or
    incremental)."""
    running = state.get("pass")
    # a pass goes on only with the fixed options it started with (a full pass may change them)
    same = isinstance(running, dict) and running.get("transform", transform) == transform
    if isinstance(running, dict) and same and not (full and running.get("mode") != "full"):
        return dict(running), running.get("reason"), True
    reason: str | None = None
    if full:
        reason = full
    elif state.parts is None:
        reason = "first sync of this pair: the target is read once to record what it holds"
    else:
        reason = _outside(state, dst, shard)
    info: dict[str, Any] = {
        "mode": "full" if reason else "incremental",
        "reason": reason,
        "phase": "scan",
        "cursor": None,
        "expected": state.records,
        "started": time.time(),
        "transform": transform,
    }
    if reason:
        count = -(-src.store.count() // shard[1])
        info.update(expected=count, bulk=dst.store.count() == 0)
        state.reset(_bin_count(src.store, count, shard))
    state.restart_source()
    plan = None if reason else _bins_plan(state, src.store, shard)
    if plan is not None:
        info.update(bins=plan, expected=plan["records"])
        _seed_unread(state, plan)
    state.put("pass", info)
    state.commit()
    return info, reason, False


def _bins_plan(state: SyncState, source: VectorStore, shard: tuple[int, int]) -> dict[str, Any] | None:
    """The key bins an incremental pass reads when the source gives the digest fold of each
    (:class:`~.._features.SupportsBinDigests`): those whose fold differs from what the state
    says the target holds, in the ``parts`` bins the source gives (they divide the state's).
    ``None``: read every record (no such source, a shard, whose state holds part of the keys,
    or a source that cannot tell without reading)."""
    binned = bin_digests_of(source)
    if binned is None or shard[1] > 1 or not state.parts:
        return None
    sums = binned.bin_digests(state.parts)
    if sums is None or state.parts % sums.parts:
        return None
    read = state.target.folded(sums.parts).differing(sums)
    return {"parts": sums.parts, "read": read, "records": sum(sums.counts[b] for b in read)}


def _bin_count(source: VectorStore, records: int, shard: tuple[int, int]) -> int:
    """The key bins of a state recording ``records``: finer where the source gives the digest
    fold of each (:func:`_bins_plan`): a changed bin then costs reading its records, not only
    listing its keys; as fine as the source keeps them at most."""
    binned = bin_digests_of(source) if shard[1] == 1 else None
    if binned is None:
        return bin_count(records)
    parts = bin_count(records, READ_RECORDS_PER_BIN)
    kept = binned.bin_digests(parts)
    return bin_count(records) if kept is None else max(kept.parts, bin_count(records))


def _seed_unread(state: SyncState, plan: Mapping[str, Any] | None) -> None:
    """The bins a pass does not read (``plan``: :func:`_bins_plan`) hold what the target
    holds: their source fold is the target's, so :meth:`_Pass.gone` looks in none of them."""
    if plan is None or not state.parts:
        return
    n, read = int(plan["parts"]), set(plan["read"])
    state.source.take(state.target, [s for s in range(state.parts) if s % n not in read])


def _bins_read(info: Mapping[str, Any], parts: int) -> int:
    """The state's key bins whose records the pass reads: all, or those of ``info["bins"]``."""
    plan = info.get("bins")
    return parts if plan is None else len(plan["read"]) * (parts // int(plan["parts"]))


@dataclass
class SyncContext:
    """One sync run (or one shard's pass of it, in a Ray task): its endpoints, options, state
    and the report being built. The driver's context has no state when the runner's shards keep
    their own (:attr:`~._engine.Runner.here` is false)."""

    source: StoreLike
    target: StoreLike
    options: SyncOptions
    src: Endpoint
    dst: Endpoint
    transformer: Transformer
    report: SyncReport
    started: float
    state: SyncState | None = None
    segment: tuple[int, int] = (0, 1)
    batch: int = DEFAULT_BATCH


def _context(
    source: StoreLike,
    target: StoreLike,
    options: SyncOptions,
    pair: tuple[Endpoint, Endpoint],
    segment: tuple[int, int],
    *,
    here: bool,
) -> SyncContext:
    """The context of a run over the opened ``pair``: with ``here``, the state of ``segment`` is
    opened in this process (else the report names the state every shard's file sits beside)."""
    src, dst = pair
    transformer = Transformer(dst.capabilities.metadata, options.metadata_policy, options.text_key)
    path = _state_path(options.state, src, dst)
    report = SyncReport(src.label, dst.label, delete=options.delete, options=options.to_dict())
    report.sync.unwritable.cap = options.cap
    ctx = SyncContext(source, target, options, src, dst, transformer, report, time.monotonic())
    ctx.segment = segment
    ctx.batch = min(options.batch_size or DEFAULT_BATCH, dst.capabilities.max_write_batch)
    report.state = str(path)
    if here:
        identity: dict[str, JSON] = {"source": src.label, "target": dst.label}
        if segment[1] > 1:
            identity["shard"] = list(segment)
        report.state = str(shard_path(path, segment))
        ctx.state = SyncState(shard_path(path, segment), identity)
    return ctx


@bulk_allocations()
def scan_pass(ctx: SyncContext, transform: JSON, why: str | None, position: JSON | None) -> None:
    """A pass over ``ctx``'s shard that reads the source (see the module docstring), under
    every runner; ``position``: the change feed's, noted before the pass, so the changes the
    scan may miss are applied after it."""
    st, report = ctx.state, ctx.report
    assert st is not None
    info, reason, resumed = _start(st, ctx.src, ctx.dst, transform, why, ctx.segment)
    if position is not None and not resumed:
        info["capture"] = position
        st.put("pass", info)
        st.commit()
    stats = report.sync
    stats.mode, stats.reason, stats.resumed = info["mode"], reason, resumed
    stats.bins = st.parts or 0
    stats.bins_read = _bins_read(info, stats.bins)
    if reason:
        report.notes.append(f"full pass: {reason}")
    if resumed:
        report.notes.append("continued the pass an earlier run left unfinished")
    o = ctx.options
    run = _Pass(
        ctx.src,
        ctx.dst,
        st,
        ctx.transformer,
        stats,
        delete=o.delete,
        batch_size=ctx.batch,
        concurrency=o.concurrency,
        retry=o.retry,
        progress=o.progress,
        shard=ctx.segment,
    )
    run.info = info
    _phases(run, report)
    st.put("transform", transform)
    st.put("capture", info.get("capture"))
    st.put("pass", None)
    st.put("last", {"finished": time.time(), **stats.to_dict()})
    st.commit()


def _phases(run: _Pass, report: SyncReport) -> None:
    """scan (→ extras, a full pass) → gone, each continued where an interrupted pass stopped."""
    info = run.info
    t0 = time.monotonic()
    if info["phase"] == "scan":
        run.scan()
        info["phase"] = "extras" if info["mode"] == "full" else "gone"
        run.save(force=True)
    if info["phase"] == "extras":
        run.extras()
        info["phase"] = "gone"
        run.save(force=True)
    report.timings["scan"] = time.monotonic() - t0
    t0 = time.monotonic()
    run.gone()
    report.timings["gone"] = time.monotonic() - t0


def sync_shard(
    source: StoreLike, target: StoreLike, shard: tuple[int, int], options: SyncOptions, why: str | None
) -> SyncReport:
    """One shard's scan pass in this process, with the shard's own state file: the work of one
    of a runner's shards (a Ray task). The runner created the target and decided ``why``."""
    with _opened(source, target, options, shard, here=True) as ctx:
        scan_pass(ctx, options.fixed(), why, None)
        ctx.report.sync.seconds = time.monotonic() - ctx.started
        return ctx.report


@contextmanager
def _opened(
    source: StoreLike, target: StoreLike, options: SyncOptions, segment: tuple[int, int], *, here: bool
) -> Iterator[SyncContext]:
    """The run's context over the opened pair (see :func:`_context`); everything closed after."""
    pair = _pair(source, target, options.source_options, options.target_options)
    ctx: SyncContext | None = None
    try:
        ctx = _context(source, target, options, pair, segment, here=here)
        yield ctx
    finally:
        if ctx is not None and ctx.state is not None:
            ctx.state.close()
        pair[1].close()
        pair[0].close()


def merge_shards(report: SyncReport, shards: list[SyncReport], seconds: float) -> None:
    """Fold the passes a runner's shards ran side by side into the run's report: counts summed
    (over every pass of the run), notes worded as one process words them."""
    report.shards = shards
    report.sync = SyncStats.merged([report.sync, *(r.sync for r in shards)], seconds)
    full = [r for r in shards if r.sync.mode == "full"]
    if full:
        which = "" if len(full) == len(shards) else f" ({len(full)} of {len(shards)} shards)"
        report.notes.append(f"full pass{which}: {full[0].sync.reason}")
    resumed = sum(r.sync.resumed for r in shards)
    if resumed:
        report.notes.append(
            f"{resumed} of {len(shards)} shards continued the pass an earlier run left unfinished"
        )
    report.timings["sync"] = seconds


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
    run.check(opts, source, target)
    if opts.state is None and isinstance(source, str) and isinstance(target, str):
        opts = replace(opts, state=default_state(source, target))  # the same file wherever it runs
    delegated = run.delegate(source, target, opts)
    if delegated is not None:
        assert isinstance(delegated, SyncReport)
        return delegated
    with _opened(source, target, opts, opts.shard, here=run.here) as ctx:
        ctx.report.engine = run.describe()
        _check_fixed(ctx, run)
        _check_spec(ctx.src, ctx.dst)
        _passes(ctx, run, on_lag)
        _finish(ctx, run)
        return ctx.report


def _finish(ctx: SyncContext, runner: Runner) -> None:
    """Status and notes, then the verification asked for: the end of every run, under every runner."""
    report = ctx.report
    report.sync.seconds = time.monotonic() - ctx.started
    report.conclude()
    if ctx.options.verify and report.verification is None:
        t0 = time.monotonic()
        report.verified(runner.sync_verify(ctx, progress=ctx.options.progress))
        report.timings["verify"] = time.monotonic() - t0
    elif report.verification is not None and report.status == Status.SYNCED:
        report.status = report.verification.status
    report.engine = runner.describe()
    report.timings["total"] = time.monotonic() - ctx.started


def _check_fixed(ctx: SyncContext, runner: Runner) -> None:
    """Refuse, before anything is written, a run whose fixed options (the metadata policy, the
    text key) differ from those the target was synced with, as recorded in the state of each of
    the runner's shards: the rule a migration's checkpoint keeps. ``full`` may change them (its
    pass compares and rewrites every record)."""
    if ctx.options.full or ctx.report.state is None:
        return
    base = Path(ctx.report.state)
    paths = [base] if runner.here else [shard_path(base, (i, runner.shards)) for i in range(runner.shards)]
    for path in paths:
        recorded = recorded_fixed(path)
        if recorded is not None:
            ctx.options.check_fixed(
                recorded,
                "sync state",
                path,
                "sync with the values it records, or pass full=True to rewrite the target with the "
                "new ones (a full pass), or another state= path",
            )


def _state_path(state: str | os.PathLike[str] | None, src: Endpoint, dst: Endpoint) -> Path:
    """The run's state file (a shard's sits beside it: :func:`~._checkpoint.shard_path`); by
    default the one the command line uses for the same two stores."""
    return Path(state) if state is not None else default_state(src.label, dst.label)


def _feed(ctx: SyncContext) -> ChangeFeed | None:
    """The source's change feed when this process runs the whole pass (one reader of one
    stream); ``follow`` needs one."""
    feed = feed_of(ctx.src.store, ctx.segment) if ctx.state is not None else None
    if ctx.state is None and _captures(ctx.src.store):
        ctx.report.notes.append(
            "the source captures its changes, but a change feed is one stream read by one process: "
            "the runner's shards scanned the source instead (engine local applies the captured changes)"
        )
    if ctx.options.follow:
        check_follow(ctx.src.store, ctx.src.label)
        if feed is None:
            raise ConfigurationError(
                f"{ctx.src.label} has no change capture installed, so follow=True has nothing to read: "
                "install it first with the source store's setup_capture()"
            )
    return feed


def _captures(store: VectorStore) -> bool:
    """Whether the source has change capture installed."""
    feed = feed_of(store)
    if feed is None:
        return False
    feed.close()
    return True


def _passes(ctx: SyncContext, runner: Runner, on_lag: Callable[[Lag], None] | None) -> None:
    """The pass (or passes) one call runs: a capture pass when the source captures its changes
    and the state can go on from them, else a scan pass by every shard of the runner; then, with
    ``follow``, changes as they come, and with ``until_equal``, passes until the target
    verifies equal."""
    o = ctx.options
    transform = o.fixed()
    feed = _feed(ctx)
    why = "asked for (full)" if o.full else None
    until = (lambda: _equal(ctx, runner)) if o.until_equal else None
    try:
        while True:
            capture = _capture_if_ready(ctx, feed, transform, why, on_lag)
            if capture is None:
                _scan_passes(ctx, runner, transform, why, feed)
            why = None
            if o.follow and feed is not None:
                follow_until(
                    capture or _capture_run(ctx, feed),
                    poll=o.poll,
                    on_lag=on_lag,
                    caught_up=until,
                    max_outage=o.max_outage,
                )
                return
            if until is None or until():
                return
            time.sleep(o.poll)
    finally:
        if feed is not None:
            feed.close()


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
    if _outside(ctx.state, ctx.dst, ctx.segment) is not None or ctx.state.get("transform") != transform:
        return None
    if not ready(ctx.state, feed):
        return None
    return _capture_pass(ctx, feed, on_lag)


def _scan_passes(
    ctx: SyncContext, runner: Runner, transform: JSON, why: str | None, feed: ChangeFeed | None
) -> None:
    """A scan pass by each of the runner's shards. Whether the target was changed outside sync
    is judged here over every shard's state when there are several (none can alone)."""
    if why is None and runner.shards > 1 and ctx.report.state is not None:
        why = outside_shards(ctx.report.state, ctx.dst, runner.shards)
    t0 = time.monotonic()
    shards = runner.sync_passes(ctx, transform, why, mark(feed) if feed is not None else None)
    if shards:
        merge_shards(ctx.report, shards, time.monotonic() - t0)
    if feed is not None and ctx.state is not None:
        trim_scanned(ctx.state, feed)


def _equal(ctx: SyncContext, runner: Runner) -> bool:
    """``until_equal``: verify the target; whether the data is equal (the report keeps the
    verification)."""
    ctx.report.verification = runner.sync_verify(ctx, progress=ProgressMode.NONE)
    return ctx.report.verification.status != Status.DIFFERENCES


def committed(state: str | os.PathLike[str]) -> dict[str, JSON] | None:
    """The interrupted pass recorded in the state file at ``state`` (``None`` when no pass is
    running): what the message printed on Ctrl-C reports."""
    import json
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE name = 'pass'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    value = None if row is None else json.loads(row[0])
    return value if isinstance(value, dict) else None
