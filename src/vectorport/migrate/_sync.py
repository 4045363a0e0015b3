"""``vectorport.sync()``: bring a target to its source's current state at the cost of the change.

One pass reads the whole source (backends keep no change log vectorport could trust), and
compares each record's content digest (:mod:`._digest`) with the digest the sync state
(:mod:`._syncstate`) records for the target: only new and changed records are written, and the
target is not read at all. Records gone from the source are found per key bin: after the scan,
a bin whose source digest equals the target's lost nothing; only the keys of the bins
that differ are looked up in the source. With ``delete`` they are deleted from the target,
without it they are counted.

The first sync of a pair (or ``full=True``, or a target whose count no longer matches the
state) has nothing to trust yet: it reads the target record by record as verification does,
writes what differs and records the rest, so a sync after a migrate rewrites nothing.

A pass is resumable at any instant: the state commits its cursor behind the records the target
acknowledged, and a killed pass continues at the next call. See :mod:`._syncstate` for why a
kill never leaves a record the state believes and the target does not hold.

``shard=(i, n)`` restricts a pass to the source's native scan segment ``i`` of ``n`` (as
``migrate --shard``), with its own state file (:func:`~._checkpoint.shard_path`): n shards run
side by side (``sync --engine ray``) and each keeps, resumes and finds deletions in its part of
the key space alone. Two things a shard cannot judge alone are decided by whoever runs the
shards (:mod:`._syncshards`): creating the target, and whether the target was changed outside
sync (over every shard's state).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._activity import listening
from .._changes import ChangeFeed
from .._digest import bin_count, bin_of, record_digest
from .._exit import Status
from .._features import Feature, bulk_load_of
from .._models import JSON, Record, ScanPage
from .._protocol import VectorStore
from .._retry import RetryPolicy, retry_scope
from ..exceptions import ConfigurationError, ConflictError, TransientError
from ._api import state_dir
from ._capture import CaptureRun, Lag, check_follow, feed_of, follow_until, mark, ready
from ._checkpoint import shard_path
from ._endpoints import Endpoint, StoreLike
from ._engine import DEFAULT_BATCH, open_pair
from ._options import parse_shard
from ._plan import planned_target_spec
from ._progress import Progress, ProgressMode
from ._report import DEFAULT_CAP
from ._run import IndexBar
from ._syncreport import SyncReport, SyncStats
from ._syncstate import SyncState
from ._transform import MetadataPolicy, Transformer
from ._verify import VECTOR_TOLERANCE, same_content, verify_stores

__all__ = ["default_state", "sync"]

log = logging.getLogger("vectorport.migrate")

COMMIT_INTERVAL = 0.5
"""Seconds between state commits while nothing is written (always committed before a write)."""
MAX_RESTARTS = 5
"""Source scans started again because the source moved under a positional cursor (Chroma)."""


def default_state(source: str, target: str) -> Path:
    """Where the CLI keeps a sync's state when ``--state`` is not given: the migration state
    folder (see :func:`~._api.default_checkpoint`) ``/syncs/<hash of the two URLs>.sqlite``."""
    import hashlib

    digest = hashlib.sha256(f"{source}\n{target}".encode()).hexdigest()[:16]
    return state_dir() / "syncs" / f"{digest}.sqlite"


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
        with listening(index_bar), index_bar, load, Progress("sync", total, enabled=self.progress) as bar:
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
                    self.info["cursor"] = None
                    self.save(force=True)

    def _scan_once(self, bar: Progress) -> None:
        inflight: deque[_Page] = deque()
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="vectorport-sync")
        failed: BaseException | None = None
        try:
            pages = iter(
                self.source.scan(
                    batch_size=self.batch_size,
                    include=["vector", "metadata", "text"],
                    segment=self.shard,
                    cursor=self.info.get("cursor"),
                )
            )
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
    if isinstance(running, dict) and not (full and running.get("mode") != "full"):
        return dict(running), running.get("reason"), True
    reason: str | None = None
    if full:
        reason = full
    elif state.parts is None:
        reason = "first sync of this pair: the target is read once to record what it holds"
    elif state.get("transform") != transform:
        reason = "the metadata policy or text key changed since the last sync"
    else:
        reason = _outside(state, dst, shard)
    info: dict[str, Any] = {
        "mode": "full" if reason else "incremental",
        "reason": reason,
        "phase": "scan",
        "cursor": None,
        "expected": state.records,
        "started": time.time(),
    }
    if reason:
        count = -(-src.store.count() // shard[1])
        info.update(expected=count, bulk=dst.store.count() == 0)
        state.reset(bin_count(count))
    state.restart_source()
    state.put("pass", info)
    state.commit()
    return info, reason, False


@dataclass
class _Job:
    """One call of :func:`sync`: its endpoints, state, report and options."""

    src: Endpoint
    dst: Endpoint
    state: SyncState
    transformer: Transformer
    report: SyncReport
    segment: tuple[int, int]
    delete: bool
    batch_size: int
    concurrency: int
    retry: RetryPolicy | None
    progress: ProgressMode | bool


def _scan_pass(job: _Job, transform: JSON, why: str | None, feed: ChangeFeed | None) -> None:
    """A pass that reads the source (see the module docstring); with a change feed, its
    position is noted first, so the changes the scan may miss are applied after it."""
    st, report = job.state, job.report
    info, reason, resumed = _start(st, job.src, job.dst, transform, why, job.segment)
    if feed is not None and not resumed:
        info["capture"] = mark(feed)
        st.put("pass", info)
        st.commit()
    stats = report.sync
    stats.mode, stats.reason, stats.resumed = info["mode"], reason, resumed
    stats.bins = st.parts or 0
    if reason:
        report.notes.append(f"full pass: {reason}")
    if resumed:
        report.notes.append("continued the pass an earlier run left unfinished")
    run = _Pass(
        job.src,
        job.dst,
        st,
        job.transformer,
        stats,
        delete=job.delete,
        batch_size=job.batch_size,
        concurrency=job.concurrency,
        retry=job.retry,
        progress=job.progress,
        shard=job.segment,
    )
    run.info = info
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
    st.put("transform", transform)
    st.put("capture", info.get("capture"))
    st.put("pass", None)
    st.put("last", {"finished": time.time(), **stats.to_dict()})
    st.commit()


def _capture_run(job: _Job, feed: ChangeFeed) -> CaptureRun:
    return CaptureRun(
        job.src.store,
        job.dst.store,
        job.state,
        job.transformer,
        job.report.sync,
        feed,
        delete=job.delete,
        batch_size=job.batch_size,
        retry=job.retry,
        concurrency=job.concurrency,
    )


def _capture_pass(job: _Job, feed: ChangeFeed, on_lag: Callable[[Lag], None] | None) -> CaptureRun:
    """A pass that applies what the source captured since the last one (no scan)."""
    stats = job.report.sync
    stats.mode, stats.bins = "capture", job.state.parts or 0
    job.report.notes.append(f"applied the changes captured by the source ({feed.kind} {feed.name})")
    t0 = time.monotonic()
    run = _capture_run(job, feed)
    run.drain(on_lag)
    job.report.timings["capture"] = time.monotonic() - t0
    job.state.put("last", {"finished": time.time(), **stats.to_dict()})
    job.state.commit()
    return run


def _equal(job: _Job, sample_queries: int, k: int, cap: int) -> bool:
    """``--until-equal``: verify the target; whether the data is equal (the report keeps the
    verification)."""
    job.report.verification = verify_stores(
        job.src.store,
        job.dst.store,
        job.transformer,
        source_label=job.src.label,
        target_label=job.dst.label,
        sample_queries=sample_queries,
        k=k,
        cap=cap,
        concurrency=job.concurrency,
        progress=False,
    )
    return job.report.verification.status != Status.DIFFERENCES


def sync(
    source: StoreLike,
    target: StoreLike,
    *,
    delete: bool = False,
    full: bool | str = False,
    state: str | os.PathLike[str] | None = None,
    shard: str | tuple[int, int] | None = None,
    batch_size: int | None = None,
    concurrency: int = 4,
    verify: bool = False,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    progress: ProgressMode | bool = False,
    sample_queries: int = 20,
    k: int = 10,
    cap: int = DEFAULT_CAP,
    retry: RetryPolicy | None = None,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
    follow: bool = False,
    until_equal: bool = False,
    poll: float = 0.5,
    on_lag: Callable[[Lag], None] | None = None,
) -> SyncReport:
    """Bring ``target`` to ``source``'s current state: copy new and changed records and, with
    ``delete=True``, delete the records gone from the source. Return a report.

    Parameters
    ----------
    source, target:
        Store URLs or stores, as for :func:`vectorport.migrate`. The target is created with
        the source's spec when missing.
    delete:
        Delete from the target the records that are not in the source (without it they are
        only counted, as ``report.sync.gone``).
    full:
        Read and compare the whole target instead of trusting the state (as the first sync of
        a pair does); a string is the reason reported (a runner of shards that found the
        target changed outside sync, see :func:`~._syncshards.changed_outside`).
    state:
        The sync state file (SQLite). Default: one per URL pair under the state folder
        (:func:`default_state`). An interrupted pass continues from it at the next call.
    shard:
        ``(i, n)`` or ``"i/n"``: sync only the source's scan segment ``i`` of ``n``, with the
        state file ``<state>.shard-i-of-n.sqlite``; see the module docstring.
    verify:
        Verify the whole target afterwards, as ``migrate`` does (reads both stores in full;
        with ``shard``, that shard's records only).
    metadata_policy, text_key, batch_size, concurrency, retry, progress, sample_queries, k:
        As for :func:`vectorport.migrate`.
    follow:
        After the pass, apply the source's captured changes as they come, until interrupted
        (or ``until_equal``). Needs change capture on the source (``setup_capture``, pgvector).
    until_equal:
        Return once the target is caught up and verifies equal to the source (the report holds
        that verification): with ``follow`` checked each time the feed is drained, without it
        after each pass, passes repeating every ``poll`` seconds until then.
    poll:
        Seconds between reads of the change feed when it had nothing (``follow``), or between
        passes (``until_equal``).
    on_lag:
        Called with a :class:`~._capture.Lag` after each read of the change feed.

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
    started = time.monotonic()
    if concurrency < 1:
        raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
    if batch_size is not None and batch_size < 1:
        raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
    segment = parse_shard(shard)
    src, dst = _pair(source, target, source_options, target_options)
    st: SyncState | None = None
    try:
        transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
        path = _state_path(state, source, target, src, dst, segment)
        identity: dict[str, JSON] = {"source": src.label, "target": dst.label}
        if segment[1] > 1:
            identity["shard"] = list(segment)
        st = SyncState(path, identity)
        report = SyncReport(src.label, dst.label, state=str(path), delete=delete)
        report.sync.unwritable.cap = cap
        size = min(batch_size or DEFAULT_BATCH, dst.capabilities.max_write_batch)
        _check_spec(src, dst)
        why = full if isinstance(full, str) else ("asked for (full)" if full else None)
        job = _Job(src, dst, st, transformer, report, segment, delete, size, concurrency, retry, progress)
        until = (lambda: _equal(job, sample_queries, k, cap)) if until_equal else None
        _passes(job, why, follow=follow, until=until, poll=poll, on_lag=on_lag)
        report.sync.seconds = time.monotonic() - started
        report.conclude()
        if verify and report.verification is None:
            t0 = time.monotonic()
            verification = verify_stores(
                src.store,
                dst.store,
                transformer,
                source_label=src.label,
                target_label=dst.label,
                shard=segment,
                sample_queries=sample_queries,
                k=k,
                cap=cap,
                concurrency=concurrency,
                progress=progress,
            )
            report.verified(verification)
            report.timings["verify"] = time.monotonic() - t0
        elif report.verification is not None and report.status == Status.SYNCED:
            report.status = report.verification.status
        report.timings["total"] = time.monotonic() - started
        return report
    finally:
        if st is not None:
            st.close()
        dst.close()
        src.close()


def _state_path(
    state: str | os.PathLike[str] | None,
    source: StoreLike,
    target: StoreLike,
    src: Endpoint,
    dst: Endpoint,
    segment: tuple[int, int],
) -> Path:
    if state is not None:
        path = Path(state)
    elif isinstance(source, str) and isinstance(target, str):
        path = default_state(source, target)
    else:
        path = default_state(src.label, dst.label)
    return shard_path(path, segment)


def _passes(
    job: _Job,
    why: str | None,
    *,
    follow: bool,
    until: Callable[[], bool] | None,
    poll: float,
    on_lag: Callable[[Lag], None] | None,
) -> None:
    """The pass (or passes) one call runs: a capture pass when the source captures its changes
    and the state can go on from them, else a scan pass; then, with ``follow``, changes as they
    come, and with ``until``, passes until it says the target is equal."""
    transform = job.transformer.describe()
    feed = feed_of(job.src.store, job.segment)
    if follow:
        check_follow(job.src.store, job.src.label)
        if feed is None:
            raise ConfigurationError(
                f"{job.src.label} has no change capture installed, so --follow has nothing to read: "
                f"run vectorport sync --setup-capture {job.src.label} first"
            )
    try:
        while True:
            outside = None if why else _outside(job.state, job.dst, job.segment)
            capture: CaptureRun | None = None
            fresh = why is None and outside is None and job.state.get("transform") == transform
            if feed is not None and fresh and ready(job.state, feed):
                capture = _capture_pass(job, feed, on_lag)
            if capture is None:
                _scan_pass(job, transform, why or outside, feed)
            why = None
            if follow and feed is not None:
                follow_until(capture or _capture_run(job, feed), poll=poll, on_lag=on_lag, caught_up=until)
                return
            if until is None or until():
                return
            time.sleep(poll)
    finally:
        if feed is not None:
            feed.close()


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
