"""The migration as stages over one run context.

::

    migrate(source, target, runner=…, **options)      options: MigrateOptions (typed, frozen)
      │ runner.check(options) → placement             refuse what the runner cannot honour,
      │ placement.whole → the whole run as one task   before any read or write
      ▼
    RunContext ── open ── checkpoint ── plan ── copy ─────────── finish
                  (both   (resume,      (checks:  here, or one    verify (here, or merged
                  stores)  done runs)   a pass,   task per shard  digests from tasks), status,
                                        or as     (runner.map)    notes, checkpoint: once
                                        records
                                        stream)

Every stage is written here once (the copy in :mod:`._copy`, the verification in
:mod:`vectorport.verify`); the runner only places their tasks.

The default is the fast safe path: into a new collection the source is read once (the plan's
per-record checks run as records stream through the copy, digests are kept during the copy,
verification reads the target and re-reads the source only where digests differ). The plan
reads the source first only where it must: into an existing collection, a shard of a shared
target, re-embedded records, or ``single_pass=False``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from .._digest import BinSums, bin_count
from .._embedder import Embedder
from .._exit import Status
from .._url import mask_url
from ..engine._checkpoint import Checkpoint, shard_path
from ..engine._endpoints import Endpoint, StoreLike, count_or_none, open_pair
from ..engine._runner import LocalRunner, Placement, Runner
from ..engine._transform import Transformer
from ..engine._whole import delegated
from ..exceptions import Advice, Advised, Call, ConfigurationError, VectorportError
from ..verify._placed import Pair, verify_placed
from ..verify._queries import SampledQueries
from ..verify._tasks import TargetScan
from ..verify._verify import VerifyReport
from ._copy import DEFAULT_BATCH, copy_placed
from ._options import MigrateOptions
from ._plan import PlanChecker, PlanRefusedError, build_plan
from ._readback import ReadBack
from ._reembed import ReembedEstimate, load_embedder
from ._report import MigrationReport

__all__ = ["RunContext", "migrate"]

log = logging.getLogger("vectorport.migrate")

MAX_COPY_BINS = 4096
"""At most this many key bins in a single-pass copy's digests (96 KB in its checkpoint)."""


@dataclass
class RunContext:
    """One migration run: its endpoints, options, checkpoint and the report being built."""

    source: StoreLike
    target: StoreLike
    options: MigrateOptions
    placement: Placement
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
    target_scan: TargetScan | None = None
    queries: SampledQueries | None = None

    @property
    def segment(self) -> tuple[int, int]:
        return self.options.shard

    @property
    def pair(self) -> Pair:
        return Pair(self.source, self.target, self.src, self.dst, self.transformer, self.segment)


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
    placement = run.check(opts, source, target)
    whole = delegated(run, placement, migrate, _copied_records, source, target, opts)
    if whole is not None:
        assert isinstance(whole, MigrationReport)
        return whole
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
        ctx = RunContext(
            source, target, opts, placement, src, dst, transformer, report, started, embedder, model_id
        )
        return _stages(ctx, run)
    finally:
        dst.close()
        src.close()


def _stages(ctx: RunContext, runner: Runner) -> MigrationReport:
    """checkpoint → plan → copy → finish."""
    ctx.report.engine = ctx.placement.describe()
    if _open_checkpoint(ctx):
        ctx.report.already_complete = True
        return _finish(ctx, runner, copied=False)
    if not _plan(ctx):
        return ctx.report
    created = not ctx.dst.exists
    _prepare_copy(ctx)
    t0 = time.monotonic()
    try:
        ctx.report.copy = copy_placed(ctx, runner)
    except VectorportError:
        if created:
            _drop_if_empty(ctx)
        raise
    finally:
        ctx.report.engine = ctx.placement.describe()
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
                Advised.of(
                    "{}, but there is no checkpoint at {}: no run of this migration saved its progress "
                    "there; give {} the file of the interrupted run, or run without {} to start from "
                    "the beginning",
                    Advice("resume", True),
                    path,
                    Advice("checkpoint"),
                    Advice("resume", True),
                )
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
        Advised.of(
            "run with the values it records to continue it ({}), or pass another {} path to start a "
            "new migration",
            Advice("resume", True),
            Advice("checkpoint"),
        ),
    )
    if previous.complete and not o.plan_only:
        log.info("%s: this migration finished earlier; verifying only", path)
        ctx.ck = previous
        # the copy's digests stand for the source only while its count is the one it had then
        same = previous.source_count is not None and previous.source_count == count_or_none(ctx.src.store)
        ctx.digests = previous.digests if previous.single_pass and same else None
        return True
    if o.resume:
        ctx.ck = previous
        if previous.single_pass and o.single_pass is False:
            previous.digests = None  # only a single-pass run keeps them up to date
    else:
        log.warning("%s records an unfinished run; starting from the beginning (resume to continue it)", path)
    return False


def _plan(ctx: RunContext) -> bool:
    """The plan (a pass over the source, or only the record-free checks when the records are
    checked as they stream); False when the run ends here (``plan_only``)."""
    o, report = ctx.options, ctx.report
    ctx.one_pass = not o.plan_only and _one_pass_allowed(ctx)
    t0 = time.monotonic()
    estimate = ReembedEstimate.of(ctx.embedder) if ctx.embedder is not None else None
    ck = ctx.ck  # a single pass streams from the checkpoint on: its estimate counts only those
    resumed = ck is not None and o.resume and (ck.cursor is not None or ck.scanned)
    if estimate is not None and ck is not None and resumed and not ctx.one_pass:
        estimate.resume(None if ck.scanned else ck.cursor, ck.copied)
    report.plan = build_plan(
        ctx.src,
        ctx.dst,
        ctx.transformer,
        shard=ctx.segment,
        reembed=ctx.model_id,
        reembed_dimension=ctx.embedder.dimension if ctx.embedder is not None else None,
        estimate=estimate,
        cap=o.cap,
        progress=o.progress,
        total_hint=count_or_none(ctx.src.store, ctx.segment) if o.progress and not ctx.one_pass else None,
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
        ctx.total = count_or_none(ctx.src.store, ctx.segment) or 0
        ctx.digests = _copy_digests(ck, ctx.total)
        if ck is not None:
            plan.records = ck.copied  # checked (and written) by the interrupted run
            ck.single_pass, ck.digests = True, ctx.digests
    if ck is not None:
        ck.save()


def verify_run(ctx: RunContext, runner: Runner) -> VerifyReport:
    """The verification of the run's pair, under its placement, from what the copy knows (its
    digests, its read-back); re-embedded vectors are compared record by record, here."""
    plan = ctx.report.plan
    scan = ctx.target_scan.result() if ctx.target_scan is not None else None
    queries = ctx.target_scan.queries if ctx.target_scan is not None else ctx.queries
    return verify_placed(
        runner,
        ctx.placement,
        ctx.pair,
        ctx.options,
        progress=ctx.options.progress,
        here=ctx.embedder is not None,
        compare_vectors=ctx.embedder is None,
        total_hint=plan.records if plan else None,
        copied=ctx.digests,
        read_back=ctx.read_back,
        target_scan=scan,
        queries=queries,
    )


def _copied_records(report: MigrationReport) -> int:
    return report.copy.records if report.copy else 0


def _finish(ctx: RunContext, runner: Runner, *, copied: bool) -> MigrationReport:
    """Verify, set the status, keep the checkpoint: the end of every run, under every runner."""
    report, ck = ctx.report, ctx.ck
    report.status = Status.COPIED
    report.engine = ctx.placement.describe()
    if ctx.options.verify:
        t0 = time.monotonic()
        report.verification = verify_run(ctx, runner)
        report.timings["verify"] = time.monotonic() - t0
        report.status = report.verification.status
        if ck is not None:
            ck.verified = report.verification.ok
            ck.save()
    if not copied:
        _source_changed(ctx)
    elif ck is not None and ck.complete:
        ck.source_count = count_or_none(ctx.src.store)
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


def _one_pass_allowed(ctx: RunContext) -> bool:
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
    elif ctx.placement.shards > 1:
        # the one place where the runner changes how the run reads: said in every report
        asked = True
        why = (
            f"the {ctx.placement.runner} runner copies in {ctx.placement.shards} shards, each of which "
            "could check only its own records, so a refusal in one could not stop the others' writes"
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
    if count_or_none(dst.store) != 0:
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


def _source_changed(ctx: RunContext) -> None:
    """A finished migration run again: when the source changed since, say so and name ``sync``
    (``migrate`` does not copy a finished migration again)."""
    report, src, dst, ck = ctx.report, ctx.src, ctx.dst, ctx.ck
    v = report.verification
    if v is not None:
        if v.data_equal:
            return
        changed = v.vectors.total + v.metadata.total + v.text.total
        what = f"{v.missing.total} missing in the target, {v.extra.total} extra, {changed} changed"
    else:
        now = count_or_none(src.store)
        if ck is None or ck.source_count is None or now is None or now == ck.source_count:
            return
        what = f"it holds {now} records, {ck.source_count} when the migration finished"
    where = f" (checkpoint {ck.path})" if ck is not None else ""
    src_url, dst_url = (mask_url(e.url_string) if e.url_string else e.label for e in (src, dst))
    report.notes.append(
        Advised.of(
            "the source changed since this migration finished{}: {}. migrate does not copy a finished "
            "migration again; to bring the target up to date run: {} ({} also deletes the records gone "
            "from the source)",
            where,
            what,
            Call("sync", (src_url, dst_url)),
            Advice("delete", True),
        )
    )
