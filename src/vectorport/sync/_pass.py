"""A scan pass: bring a target to its source's current state at the cost of the change.

One pass reads the whole source (backends keep no change log vectorport could trust), and
compares each record's content digest (:mod:`vectorport._digest`) with the digest the sync state
(:mod:`._state`) records for the target: only new and changed records are written, and the
target is not read at all. Records gone from the source are found per key bin: after the scan,
a bin whose source digest equals the target's lost nothing; only the keys of the bins
that differ are looked up in the source. With ``delete`` they are deleted from the target,
without it they are counted.

A source that keeps the digest fold of each key bin (:attr:`~vectorport.Feature.BIN_DIGESTS`:
a Parquet snapshot's manifest) is not read whole: an incremental pass compares its folds with
the state's and reads only the records of the bins that differ (``info["bins"]``, fixed when the
pass starts, so a resumed pass reads the same bins); the bins it skips hold what the target
holds, so their source fold is the target's and no record there is gone.

The first sync of a pair (or ``full=True``, or a target whose count no longer matches the
state) has nothing to trust yet: it reads the target record by record as verification does,
writes what differs and records the rest, so a sync after a migrate rewrites nothing.

A pass is resumable at any instant: the state commits its cursor behind the records the target
acknowledged, and a killed pass continues at the next call. See :mod:`._state` for why a
kill never leaves a record the state believes and the target does not hold.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from .._activity import listening
from .._digest import READ_RECORDS_PER_BIN, bin_count, bin_of, record_digest
from .._features import Feature, bin_digests_of, bulk_load_of, split_replace_of
from .._gc import bulk_allocations
from .._models import JSON, Record, ScanPage
from .._protocol import VectorStore
from .._retry import RetryPolicy, retry_scope
from ..engine._checkpoint import shard_path
from ..engine._endpoints import Endpoint
from ..engine._pipeline import Acknowledged, upserting
from ..engine._progress import IndexBar, Progress, ProgressMode
from ..engine._transform import Transformer
from ..exceptions import ConflictError, TransientError
from ..verify._judge import VECTOR_TOLERANCE, same_content
from ._context import SyncContext
from ._report import SyncReport, SyncStats
from ._state import SyncState, recorded

__all__ = ["outside", "outside_shards", "scan_pass"]

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
        prepare: Callable[[Sequence[Record]], list[Record]] | None = None,
    ) -> None:
        self.prepare = prepare
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
    def _retried(self, exc: TransientError) -> None:
        with self.lock:
            self.stats.retries += 1

    def _prepare(self, page: ScanPage) -> tuple[_Page, list[Record]]:
        """Transform and digest a page; the records to write (new or changed) and the page."""
        parts = self.state.parts or 1
        items: list[tuple[Record, int, bytes]] = []
        for rec in page:
            out = self.transformer.apply(rec.metadata, rec.text)
            seg = bin_of(rec.key, parts)
            if out.unresolved:
                problems = [f"{p}: {m}" for p, m in out.unresolved]
                self.stats.unwritable.add({"key": rec.key, "problems": problems})
                self.state.hold([(rec.key, problems)])
                continue
            fixed = Record(rec.key, rec.vector, out.metadata, out.text)
            items.append((fixed, seg, record_digest(rec.key, rec.vector, out.metadata, out.text)))
        keys = [r.key for r, _, _ in items]
        changed: list[tuple[Record, int, bytes]] = []
        if self.info["mode"] == "full":
            found = {r.key: r for r in self.target.get(keys)} if keys else {}
            self.stats.target_read += len(found)
            # re-embedding: the target's vectors are the model's, so its text and metadata say
            # whether a record changed (unless the model itself changed: every record is rewritten)
            own_vectors = self.prepare is not None and not self.info.get("new_model")
            for rec, seg, digest in items:
                got = found.get(rec.key)
                mine = Record(rec.key, got.vector, rec.metadata, rec.text) if own_vectors and got else rec
                if got is None or not same_content(
                    mine, got, tolerance=VECTOR_TOLERANCE, float_ulps=self.float_ulps
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
        writes: Acknowledged[_Page, list[Record]] = Acknowledged(
            upserting(self.target, self.retry, self._retried, self.prepare),
            concurrency=self.concurrency,
            units=self.concurrency + 1,
            name="vectorport-sync",
        )
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
                chunks = [records[i : i + self.batch_size] for i in range(0, len(records), self.batch_size)]
                if not writes.submit(prepared, chunks):
                    break
                for done in writes.acknowledged():
                    self._apply(done, bar)
        except BaseException as exc:
            failed = exc
            raise
        finally:
            # keep every page the target acknowledged, in order, up to the first failure
            for done in writes.close():
                self._apply(done, bar)
            self.save(force=True)
        if failed is None and writes.error is not None:
            raise writes.error

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


def outside(state: SyncState, dst: Endpoint, shard: tuple[int, int]) -> str | None:
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


def _model(transform: JSON) -> JSON:
    """The re-embedding model a state's (or a run's) fixed options name (``None``: the source's
    own vectors are copied)."""
    return transform.get("reembed") if isinstance(transform, dict) else None


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
    elif _model(state.get("transform")) != _model(transform):
        reason = (
            f"the state was synced with {_model(state.get('transform')) or 'the source vectors'}, "
            f"this run writes {_model(transform) or 'the source vectors'}: every record is written again"
        )
    else:
        reason = outside(state, dst, shard)
    info: dict[str, Any] = {
        "new_model": state.parts is not None and _model(state.get("transform")) != _model(transform),
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
    state.release_all()  # the scan finds every record held back again
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
        prepare=ctx.prepare,
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
