"""The migration as stages over one run context, and the runner seam.

::

    migrate(source, target, runner=…, **options)      options: MigrateOptions (typed, frozen)
      │ runner.check(options)                         refuse what the runner cannot honour,
      │                                               before any read or write
      ▼
    RunContext ── open ── checkpoint ── plan ── copy ─────────── finish
                  (both   (resume,      (checks:  runner.copy()   runner.verify(), status,
                  stores)  done runs)   a pass,   threads here,   notes, checkpoint: once
                                        or as     Ray tasks in
                                        records   vectorport.ray
                                        stream)

Every stage but ``copy`` and ``verify`` is written here once; a :class:`Runner` decides only
where the copy's and the verification's work runs (threads in this process, or Ray tasks) and
how many shards it is split into. A runner that cannot honour an option refuses it before any
I/O (:meth:`~._options.RunOptions.refused_by`).

The default is the fast safe path: into a new collection the source is read once (the plan's
per-record checks run as records stream through the copy, digests are kept during the copy,
verification reads the target and re-reads the source only where digests differ). The plan
reads the source first only where it must: into an existing collection, a shard of a shared
target, re-embedded records, or ``single_pass=False``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._digest import BinSums, bin_count
from .._embedder import Embedder
from .._exit import Status
from .._features import write_cap_of
from ..exceptions import ConfigurationError, VectorportError
from ._checkpoint import Checkpoint, shard_path
from ._endpoints import Endpoint, StoreLike, open_source, probe_target
from ._options import MigrateOptions, RunOptions, VerifyOptions
from ._plan import PlanChecker, PlanRefusedError, build_plan
from ._progress import Progress, ProgressMode
from ._readback import ReadBack
from ._reembed import load_embedder
from ._report import MigrationReport
from ._run import CopyStats, copy_records
from ._transform import Transformer
from ._verify import VerifyReport, verify_stores
from ._verify_queries import SampledQueries, sampled_queries

if TYPE_CHECKING:
    from .._models import JSON
    from .._report import Report
    from ..backends.parquet._format import PartInfo
    from ..snapshot._export import ExportContext
    from ._sync import SyncContext
    from ._syncreport import SyncReport

__all__ = ["DEFAULT_BATCH", "LocalRunner", "RunContext", "Runner", "migrate", "open_pair", "verify_pair"]

log = logging.getLogger("vectorport.migrate")

DEFAULT_BATCH = 1000
"""Records per write when ``batch_size`` is not given (capped by the target's own limit)."""

MAX_COPY_BINS = 4096
"""At most this many key bins in a single-pass copy's digests (96 KB in its checkpoint)."""


@dataclass
class RunContext:
    """One migration run: its endpoints, options, checkpoint and the report being built."""

    source: StoreLike
    target: StoreLike
    options: MigrateOptions
    src: Endpoint
    dst: Endpoint
    transformer: Transformer
    report: MigrationReport
    started: float
    embedder: Embedder | None = None
    model_id: str | None = None
    ck: Checkpoint | None = None
    one_pass: bool = False
    checker: PlanChecker | None = None
    digests: BinSums | None = None
    total: int = 0
    batch: int = DEFAULT_BATCH
    scan_page: int = DEFAULT_BATCH
    read_back: ReadBack | None = None
    queries: SampledQueries | None = None

    @property
    def segment(self) -> tuple[int, int]:
        return self.options.shard


class Runner(Protocol):
    """Where a run's copy and verification work runs. It decides placement and parallelism,
    never meaning: plan, checks, transforms, checkpoints, status and report are the stages'."""

    name: str
    shards: int
    """How many shards the copy is split into (1: this process writes every record)."""
    here: bool
    """Whether a sync pass runs in this process (on the run's own state), not in workers that
    each keep their shard's state."""

    def check(self, options: RunOptions, source: StoreLike, target: StoreLike) -> None:
        """Refuse, before any I/O, what this runner cannot honour (options, stores)."""

    def delegate(self, source: StoreLike, target: StoreLike, options: RunOptions) -> Report | None:
        """Run the whole command (``options.COMMAND``: migrate, export) elsewhere and return its
        report, or ``None`` to run it here."""

    def copy(self, ctx: RunContext) -> CopyStats:
        """Copy every record of the run (after the plan, into the created target)."""

    def export(self, ctx: ExportContext) -> list[PartInfo]:
        """Write every scan segment of an export's source as Parquet parts (the manifest is the
        export stage's)."""

    def verify(self, ctx: RunContext) -> VerifyReport:
        """Compare the target with the source after the copy."""

    def sync_passes(
        self, ctx: SyncContext, transform: JSON, why: str | None, position: JSON | None
    ) -> list[SyncReport]:
        """Run a sync's scan pass (:func:`~._sync.scan_pass`) over every shard: here on
        ``ctx`` (returns ``[]``), or as shards that return their own reports, which the stage
        merges (:func:`~._sync.merge_shards`)."""

    def sync_verify(self, ctx: SyncContext, progress: ProgressMode) -> VerifyReport:
        """Compare a sync's target with its source."""

    def compare(self, source: StoreLike, target: StoreLike, options: VerifyOptions) -> VerifyReport:
        """The standalone verification (:func:`vectorport.migrate.verify`) of two stores."""

    def describe(self) -> dict[str, Any]:
        """The report's ``engine`` section."""


def refuse_options(options: RunOptions, runner: str) -> None:
    """Every option the runner cannot honour, named in one error before any I/O."""
    refused = options.refused_by(runner)
    if refused:
        names = ", ".join(refused)
        raise ConfigurationError(
            f"{names}: not supported by the {runner} runner (engine {runner}); nothing was read or "
            "written. Drop the option or run with engine local"
        )


class LocalRunner:
    """Threads in this process: the copy's concurrent writes, the verification's segments."""

    name = "local"
    shards = 1
    here = True

    def check(self, options: RunOptions, source: StoreLike, target: StoreLike) -> None:
        refuse_options(options, self.name)

    def delegate(self, source: StoreLike, target: StoreLike, options: RunOptions) -> Report | None:
        return None

    def export(self, ctx: ExportContext) -> list[PartInfo]:
        from ..snapshot._export import write_parts

        total = _count_or_none(ctx.src.store)
        with Progress("export", total, enabled=ctx.options.progress) as bar:
            return write_parts(ctx, on_page=bar.advance)

    def copy(self, ctx: RunContext) -> CopyStats:
        o = ctx.options
        if o.verify and _read_back_applies(ctx):
            parts = ctx.digests.parts if ctx.digests is not None else bin_count(ctx.total)
            if ctx.digests is not None:  # the read-back is the target's exact truth for the queries
                ctx.queries = sampled_queries(
                    ctx.src.store, ctx.dst.store, ctx.segment, o.sample_queries, o.k
                )
            ctx.read_back = ReadBack(ctx.dst.store, parts, exact=ctx.queries.exact if ctx.queries else None)
        try:
            stats = copy_records(
                ctx.src.store,
                ctx.dst.store,
                ctx.transformer,
                shard=ctx.segment,
                batch_size=ctx.batch,
                concurrency=o.concurrency,
                checkpoint=ctx.ck,
                retry=o.retry,
                embedder=ctx.embedder,
                progress=o.progress,
                total=ctx.total,
                scan_batch_size=ctx.scan_page,
                checker=ctx.checker,
                digests=ctx.digests,
                on_written=ctx.read_back.written if ctx.read_back is not None else None,
            )
        except BaseException:
            if ctx.read_back is not None:
                ctx.read_back.close()  # the readers end before the stores are closed
            raise
        if ctx.read_back is not None:
            # the last batches are read back while verification lists the target's keys
            ctx.read_back.finish()
        return stats

    def verify(self, ctx: RunContext) -> VerifyReport:
        return verify_here(ctx)

    def sync_passes(
        self, ctx: SyncContext, transform: JSON, why: str | None, position: JSON | None
    ) -> list[SyncReport]:
        from ._sync import scan_pass

        scan_pass(ctx, transform, why, position)
        return []

    def sync_verify(self, ctx: SyncContext, progress: ProgressMode) -> VerifyReport:
        return verify_pair(ctx, progress=progress)

    def compare(self, source: StoreLike, target: StoreLike, options: VerifyOptions) -> VerifyReport:
        o = options
        src, dst = open_pair(source, target, o.source_options, o.target_options)
        try:
            if dst.naming is not None and dst.naming.refused:
                raise ConfigurationError(f"the target cannot exist: {dst.naming.reason()}")
            if not dst.exists:
                raise ConfigurationError(f"the target {dst.label} does not exist; nothing to verify")
            transformer = Transformer(dst.capabilities.metadata, o.metadata_policy, o.text_key)
            return verify_stores(
                src.store,
                dst.store,
                transformer,
                source_label=src.label,
                target_label=dst.label,
                shard=o.shard,
                sample_queries=o.sample_queries,
                k=o.k,
                tolerance=o.tolerance,
                cap=o.cap,
                concurrency=o.concurrency,
                progress=o.progress,
                method=o.method,
            )
        finally:
            dst.close()
            src.close()

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name}


def verify_pair(ctx: RunContext | SyncContext, *, progress: ProgressMode, **known: Any) -> VerifyReport:
    """The verification of a run's pair (its shard) in this process (threads), with the run's
    options; ``known``: what the run already knows (the copy's digests, a read-back)."""
    o = ctx.options
    return verify_stores(
        ctx.src.store,
        ctx.dst.store,
        ctx.transformer,
        source_label=ctx.src.label,
        target_label=ctx.dst.label,
        shard=ctx.segment,
        sample_queries=o.sample_queries,
        k=o.k,
        cap=o.cap,
        concurrency=o.concurrency,
        progress=progress,
        **known,
    )


def verify_here(ctx: RunContext) -> VerifyReport:
    """The verification in this process (threads), from the copy's digests when it kept them."""
    plan = ctx.report.plan
    return verify_pair(
        ctx,
        progress=ctx.options.progress,
        compare_vectors=ctx.embedder is None,
        total_hint=plan.records if plan else None,
        copied=ctx.digests,
        read_back=ctx.read_back,
        queries=ctx.queries,
    )


def open_pair(
    source: StoreLike,
    target: StoreLike,
    source_options: Mapping[str, Any] | None,
    target_options: Mapping[str, Any] | None,
) -> tuple[Endpoint, Endpoint]:
    """The source (which must exist) and the target (probed: it may not exist yet)."""
    src = open_source(source, **dict(source_options or {}))
    try:
        dst = probe_target(target, src.store.spec.name, **dict(target_options or {}))
    except BaseException:
        src.close()
        raise
    return src, dst


def migrate(
    source: StoreLike, target: StoreLike, *, runner: Runner | None = None, **options: Any
) -> MigrationReport:
    """Copy every record from ``source`` to ``target``, then verify; return a report.

    ``source``, ``target``: store URLs (``chroma:///data?collection=docs``,
    ``postgresql://…?table=docs``, ``s3vectors://bucket/index``) or stores. The source must
    exist; the target collection is created with the source's dimension and metric when missing.
    ``options`` are the fields of :class:`~vectorport.migrate.MigrateOptions` (each documented
    there), e.g. ``plan_only``, ``batch_size``, ``concurrency``, ``checkpoint`` and ``resume``
    (a killed run continues from its checkpoint; a finished one is only verified),
    ``metadata_policy`` (``error``, ``flatten``, ``stringify``, ``drop``), ``text_key``, ``shard``
    (``"I/N"``), ``reembed``, ``verify``, ``single_pass`` (``None``: one read of the source where
    that is safe; ``False``: plan first), ``progress``. ``runner``: where the work runs
    (default: threads in this process; :class:`vectorport.ray.RayRunner`: Ray tasks).

    Raises
    ------
    PlanRefusedError
        The plan was refused (not with ``plan_only``); nothing was written. ``exc.plan`` says why.
    VectorportError
        An operational failure (backend down, throttled beyond retries, bad URL). The
        checkpoint keeps everything acknowledged; run again with ``resume=True``.

    >>> import vectorport
    >>> src = vectorport.connect("memory://doctest-migrate-src", dimension=2)
    >>> _ = src.upsert([vectorport.Record(f"doc#{i}", [1.0, i], {"i": i}, "t") for i in range(5)])
    >>> report = vectorport.migrate.run("memory://doctest-migrate-src", "memory://doctest-migrate-dst")
    >>> print(report.status, report.exit_code, report.copy.records)
    verified 0 5
    >>> src.drop(); vectorport.connect("memory://doctest-migrate-dst").drop()
    """
    opts = MigrateOptions(**options)
    run = runner if runner is not None else LocalRunner()
    run.check(opts, source, target)
    delegated = run.delegate(source, target, opts)
    if delegated is not None:
        assert isinstance(delegated, MigrationReport)
        return delegated
    started = time.monotonic()
    embedder, model_id = load_embedder(opts.reembed) if opts.reembed else (None, None)
    src, dst = open_pair(source, target, opts.source_options, opts.target_options)
    try:
        if src.identity == dst.identity:
            raise ConfigurationError(
                f"the source and the target are the same collection ({src.label}); a migration "
                "copies into another collection: name a new table, collection or index"
            )
        transformer = Transformer(dst.capabilities.metadata, opts.metadata_policy, opts.text_key)
        report = MigrationReport(src.label, dst.label, opts.shard, Status.PLANNED, options=opts.to_dict())
        ctx = RunContext(source, target, opts, src, dst, transformer, report, started, embedder, model_id)
        return _stages(ctx, run)
    finally:
        dst.close()
        src.close()


def _stages(ctx: RunContext, runner: Runner) -> MigrationReport:
    """checkpoint → plan → copy → finish."""
    ctx.report.engine = runner.describe()
    if _open_checkpoint(ctx):
        ctx.report.already_complete = True
        return _finish(ctx, runner, copied=False)
    if not _plan(ctx, runner):
        return ctx.report
    created = not ctx.dst.exists
    _prepare_copy(ctx)
    t0 = time.monotonic()
    try:
        ctx.report.copy = runner.copy(ctx)
    except VectorportError:
        if created:
            _drop_if_empty(ctx)
        raise
    finally:
        ctx.report.engine = runner.describe()
    ctx.digests = ctx.report.copy.digests
    if ctx.checker is not None:
        ctx.checker.finish()
    if ctx.report.copy.refused:
        if ctx.read_back is not None:
            ctx.read_back.close()  # before the target it reads is dropped
        _roll_back(ctx)
        _refuse(ctx)
    # the target's deferred index build is timed apart from the copy (and its rate)
    ctx.report.timings["copy"] = time.monotonic() - t0 - ctx.report.copy.index_seconds
    if ctx.report.copy.index_seconds >= 0.05:
        ctx.report.timings["index"] = ctx.report.copy.index_seconds
    return _finish(ctx, runner, copied=True)


def _open_checkpoint(ctx: RunContext) -> bool:
    """Load or start this run's checkpoint; True when it says the migration finished earlier."""
    o = ctx.options
    if o.checkpoint is None:
        return False
    path = shard_path(o.checkpoint, ctx.segment)
    ctx.report.checkpoint = str(path)
    ctx.ck = Checkpoint(path, ctx.src.label, ctx.dst.label, ctx.segment, o.fixed())
    previous = Checkpoint.load(path)
    if previous is None:
        if o.resume:  # a mistyped path must not start over as if resumed
            raise ConfigurationError(
                f"resume=True, but there is no checkpoint at {path}: no run of this migration saved "
                "its progress there; give checkpoint= the file of the interrupted run, or run without "
                "resume=True to start from the beginning"
            )
        return False
    why = previous.mismatch(ctx.ck)
    if why:
        raise ConfigurationError(
            f"the checkpoint {path} belongs to another migration ({why}); use another checkpoint path"
        )
    o.check_fixed(
        previous.transform,
        "checkpoint",
        path,
        "run with the values it records to continue it (resume=True), or pass another checkpoint= "
        "path to start a new migration",
    )
    if previous.complete and not o.plan_only:
        log.info("%s: this migration finished earlier; verifying only", path)
        ctx.ck = previous
        # the copy's digests stand for the source only while its count is the one it had then
        same = previous.source_count is not None and previous.source_count == _count_or_none(ctx.src.store)
        ctx.digests = previous.digests if previous.single_pass and same else None
        return True
    if o.resume:
        ctx.ck = previous
        if previous.single_pass and o.single_pass is False:
            previous.digests = None  # only a single-pass run keeps them up to date
    else:
        log.warning("%s records an unfinished run; starting from the beginning (resume to continue it)", path)
    return False


def _plan(ctx: RunContext, runner: Runner) -> bool:
    """The plan (a pass over the source, or only the record-free checks when the records are
    checked as they stream); False when the run ends here (``plan_only``)."""
    o, report = ctx.options, ctx.report
    ctx.one_pass = not o.plan_only and _one_pass_allowed(ctx, runner)
    t0 = time.monotonic()
    report.plan = build_plan(
        ctx.src,
        ctx.dst,
        ctx.transformer,
        shard=ctx.segment,
        reembed=ctx.model_id,
        reembed_dimension=ctx.embedder.dimension if ctx.embedder is not None else None,
        cap=o.cap,
        progress=o.progress,
        total_hint=_count_or_none(ctx.src.store, ctx.segment) if o.progress and not ctx.one_pass else None,
        scan=not ctx.one_pass,
    )
    report.timings["plan"] = time.monotonic() - t0
    if report.plan.refused:
        if o.plan_only:
            report.status = Status.REFUSED
            report.timings["total"] = time.monotonic() - ctx.started
            return False
        _refuse(ctx)
    if o.plan_only:
        report.timings["total"] = time.monotonic() - ctx.started
        return False
    return True


def _refuse(ctx: RunContext) -> None:
    ctx.report.status = Status.REFUSED
    ctx.report.timings["total"] = time.monotonic() - ctx.started
    assert ctx.report.plan is not None
    raise PlanRefusedError(ctx.report.plan, ctx.report)


def _prepare_copy(ctx: RunContext) -> None:
    """Create the target, size the batches, and (one pass) the streaming checks and digests."""
    plan, ck = ctx.report.plan, ctx.ck
    assert plan is not None
    ctx.dst.ensure(plan.target_spec)
    ctx.batch = min(ctx.options.batch_size or DEFAULT_BATCH, ctx.dst.capabilities.max_write_batch)
    ctx.scan_page = _scan_page(ctx)
    ctx.total = plan.records
    if ctx.one_pass:
        ctx.checker = PlanChecker(plan, ctx.dst, ctx.transformer, ctx.options.cap)
        ctx.total = _count_or_none(ctx.src.store, ctx.segment) or 0
        ctx.digests = _copy_digests(ck, ctx.total)
        if ck is not None:
            plan.records = ck.copied  # checked (and written) by the interrupted run
            ck.single_pass, ck.digests = True, ctx.digests
    if ck is not None:
        ck.save()


def _finish(ctx: RunContext, runner: Runner, *, copied: bool) -> MigrationReport:
    """Verify, set the status, keep the checkpoint: the end of every run, under every runner."""
    report, ck = ctx.report, ctx.ck
    report.status = Status.COPIED
    report.engine = runner.describe()
    if ctx.options.verify:
        t0 = time.monotonic()
        report.verification = runner.verify(ctx)
        report.timings["verify"] = time.monotonic() - t0
        report.status = report.verification.status
        if ck is not None:
            ck.verified = report.verification.ok
            ck.save()
    if not copied:
        _source_changed(ctx)
    elif ck is not None and ck.complete:
        ck.source_count = _count_or_none(ctx.src.store)
        ck.save()
    report.timings["total"] = time.monotonic() - ctx.started
    return report


def _scan_page(ctx: RunContext) -> int:
    """Records per source page: ``batch_size`` when it was given (the checkpoint then moves
    every ``batch_size`` records), else as many whole write batches as the source's largest
    page holds. A source read costs per call: 100k x 384 from Chroma in pages of 1,000 took
    14.9 s, in pages of 5,460 13.7 s."""
    if ctx.options.batch_size is not None:
        return ctx.batch
    largest = ctx.src.capabilities.max_scan_page
    return max(ctx.batch, largest - largest % ctx.batch)


def _read_back_applies(ctx: RunContext) -> bool:
    """Whether the copy reads each acknowledged batch back (:mod:`._readback`): into a target
    whose writes are paced (reads then cost no copy time), in a run that writes every record
    (not a resumed one), whose records compare as digests (not re-embedded, floats kept)."""
    ck = ctx.ck
    fresh = ck is None or (ck.cursor is None and not ck.scanned)
    return (
        fresh
        and ctx.segment[1] == 1
        and ctx.embedder is None
        and ctx.dst.capabilities.metadata.float_ulps == 0
        and write_cap_of(ctx.dst.store) is not None
    )


def _one_pass_allowed(ctx: RunContext, runner: Runner) -> bool:
    """Whether this run checks the records as it copies them (else, when one pass was asked
    for explicitly, or when only the runner stands in its way, a note says why not)."""
    asked, ck = ctx.options.single_pass, ctx.ck
    if asked is False:
        return False
    why = None
    if ctx.segment[1] > 1:
        why = "a shard shares its target with the other shards, which a refusal could not roll back"
    elif ctx.dst.exists and not (ck is not None and ck.single_pass and ck.cursor is not None):
        why = "the target exists: a refusal found mid-copy could not be rolled back by dropping it"
    elif ctx.embedder is not None:
        why = "re-embedded vectors are verified record by record"
    elif runner.shards > 1:
        # the one place where the runner changes how the run reads: said in every report
        asked = True
        why = (
            f"the {runner.name} runner copies in {runner.shards} shards, each of which could check "
            "only its own records, so a refusal in one could not stop the others' writes"
        )
    if why is None:
        return True
    if asked:
        ctx.report.notes.append(f"single pass not used ({why}); the plan read the source first")
    return False


def _copy_digests(ck: Checkpoint | None, records: int) -> BinSums | None:
    """The digests a single-pass copy folds its records into: the interrupted run's when
    resuming one, new (sized for ``records``) when starting, ``None`` when resuming a run that
    kept none (verification then reads the source)."""
    if ck is not None and (ck.cursor is not None or ck.scanned):
        return ck.digests
    return BinSums(min(bin_count(records), MAX_COPY_BINS))


def _drop_if_empty(ctx: RunContext) -> None:
    """A copy into a target this run created failed before any record was written (a source
    that cannot be read, a first batch the target refused): drop the empty target, so nothing
    is left behind, and forget the run. A target holding records is kept for ``--resume``."""
    dst = ctx.dst
    if _count_or_none(dst.store) != 0:
        return
    try:
        dst.store.drop()
    except Exception as exc:  # the copy's error is the one to report
        log.warning("the empty target %s could not be dropped after the failed copy (%s)", dst.label, exc)
        return
    log.info("the copy failed before writing anything: the target %s it created was dropped", dst.label)
    if ctx.ck is not None:
        ctx.ck.path.unlink(missing_ok=True)


def _roll_back(ctx: RunContext) -> None:
    """A single-pass copy was refused mid-way: drop the target it created, forget the run."""
    dst, report = ctx.dst, ctx.report
    copied = report.copy.records if report.copy else 0
    try:
        dst.store.drop()
    except Exception as exc:  # the refusal is the error to report; say what is left behind
        report.notes.append(f"the target {dst.label} could not be dropped after the refusal ({exc}); drop it")
    else:
        report.notes.append(
            f"the single-pass copy met records {dst.store.name} cannot take after {copied} records; "
            "the target it had created was dropped: nothing was left behind"
        )
    if ctx.ck is not None:
        ctx.ck.path.unlink(missing_ok=True)


def _count_or_none(store: Any, shard: tuple[int, int] = (0, 1)) -> int | None:
    try:
        n = int(store.count())
    except Exception:  # a count is only for progress, sizing and the "source changed" hint
        return None
    return n if shard[1] == 1 else -(-n // shard[1])


def _source_changed(ctx: RunContext) -> None:
    """A finished migration run again: when the source changed since, say so and name ``sync``
    (``migrate`` does not copy a finished migration again)."""
    from .._url import mask_url

    report, src, dst, ck = ctx.report, ctx.src, ctx.dst, ctx.ck
    v = report.verification
    if v is not None:
        if v.data_equal:
            return
        changed = v.vectors.total + v.metadata.total + v.text.total
        what = f"{v.missing.total} missing in the target, {v.extra.total} extra, {changed} changed"
    else:
        now = _count_or_none(src.store)
        if ck is None or ck.source_count is None or now is None or now == ck.source_count:
            return
        what = f"it holds {now} records, {ck.source_count} when the migration finished"
    where = f" (checkpoint {ck.path})" if ck is not None else ""
    src_url, dst_url = (mask_url(e.url_string) if e.url_string else e.label for e in (src, dst))
    report.notes.append(
        f"the source changed since this migration finished{where}: {what}. migrate does not copy a "
        f"finished migration again; to bring the target up to date run: vectorport.sync({src_url!r}, "
        f"{dst_url!r}) (delete=True also deletes the records gone from the source)"
    )
