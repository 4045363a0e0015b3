"""``vectorport.migrate()``, ``plan()`` and ``verify()``: the library entry points the CLI wraps."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._digest import SegmentSums, segment_count
from .._embedder import Embedder
from .._exit import Status
from .._features import write_cap_of
from .._retry import RetryPolicy
from .._url import mask_url
from ..exceptions import ConfigurationError
from ._checkpoint import Checkpoint, shard_path
from ._endpoints import Endpoint, StoreLike, open_source, probe_target
from ._plan import MigrationPlan, PlanChecker, PlanRefusedError, build_plan
from ._readback import ReadBack
from ._reembed import load_embedder
from ._report import DEFAULT_CAP, MigrationReport
from ._run import copy_records
from ._transform import MetadataPolicy, Transformer
from ._verify import VECTOR_TOLERANCE, VerifyReport, verify_stores
from ._verify_queries import SampledQueries, sampled_queries

__all__ = ["default_checkpoint", "migrate", "parse_shard", "plan", "state_dir", "verify"]

log = logging.getLogger("vectorport.migrate")

DEFAULT_BATCH = 1000
"""Records per write when ``batch_size`` is not given (capped by the target's own limit)."""

MAX_COPY_SEGMENTS = 4096
"""At most this many key segments in a single-pass copy's digests (96 KB in its checkpoint)."""


def parse_shard(value: str | tuple[int, int] | None) -> tuple[int, int]:
    """``"I/N"`` or ``(I, N)`` with ``0 <= I < N`` (shards are numbered from 0, as scan segments)."""
    if value is None:
        return (0, 1)
    if isinstance(value, str):
        head, sep, tail = value.partition("/")
        try:
            if not sep:
                raise ValueError
            value = (int(head), int(tail))
        except ValueError:
            raise ConfigurationError(f"--shard takes I/N, e.g. 0/4 (shards 0..N-1), got {value!r}") from None
    index, parts = value
    if not (isinstance(index, int) and isinstance(parts, int) and parts >= 1 and 0 <= index < parts):
        raise ConfigurationError(f"shard must be I/N with 0 <= I < N, got {index}/{parts}")
    return (index, parts)


def _total_hint(store: Any, shard: tuple[int, int]) -> int | None:
    try:
        n = int(store.count())
    except Exception:  # a count is only for the progress bar's ETA
        return None
    return n if shard[1] == 1 else -(-n // shard[1])


def _opened(
    source: StoreLike,
    target: StoreLike,
    source_options: Mapping[str, Any] | None,
    target_options: Mapping[str, Any] | None,
) -> tuple[Endpoint, Endpoint]:
    src = open_source(source, **dict(source_options or {}))
    try:
        dst = probe_target(target, src.store.spec.name, **dict(target_options or {}))
    except BaseException:
        src.close()
        raise
    return src, dst


def migrate(
    source: StoreLike,
    target: StoreLike,
    *,
    plan_only: bool = False,
    batch_size: int | None = None,
    concurrency: int = 4,
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
    verify: bool = True,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    shard: str | tuple[int, int] | None = None,
    reembed: str | None = None,
    progress: bool = False,
    sample_queries: int = 20,
    k: int = 10,
    cap: int = DEFAULT_CAP,
    retry: RetryPolicy | None = None,
    single_pass: bool = False,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> MigrationReport:
    """Copy every record from ``source`` to ``target``, then verify; return a report.

    Parameters
    ----------
    source, target:
        Store URLs (``chroma:///data?collection=docs``, ``postgresql://…?table=docs``,
        ``s3vectors://bucket/index``) or stores. The source must exist; the target collection is
        created with the source's dimension and metric when missing (at the first write).
    plan_only:
        Plan and return without writing anything (``status`` ``planned`` or ``refused``).
    batch_size:
        Records per write (default 1,000, capped by the target's limit).
    concurrency:
        Write batches in flight at once (threads).
    checkpoint, resume:
        A JSON file recording progress after each acknowledged batch. With ``resume=True`` an
        interrupted migration continues from it; a finished one is not copied again, only
        verified. Sharded runs use one file per shard (``ck.shard-0-of-4.json``).
    verify:
        Verify after copying (counts, keys both ways, vectors, metadata, text, queries).
    metadata_policy:
        ``error`` (default: refuse a plan in which any metadata value would not arrive intact),
        ``flatten``, ``stringify`` or ``drop``; see :class:`MetadataPolicy`.
    text_key:
        A source metadata key holding the chunk text, moved into the text field.
    shard:
        ``"I/N"``: copy only segment I of N of the source (``scan(segment=(I, N))``), so N
        processes or machines can share one migration.
    reembed:
        An embedding model: new vectors from each record's text (needs ``vectorport.ingest``).
    progress:
        Show progress bars with rate and ETA on stderr.
    retry:
        The backoff policy for the target's writes during the copy, replacing the target
        store's own (there is one retry layer: the store's). Every retry is counted in
        ``report.copy.retries``.
    single_pass:
        Read the source once. The plan's per-record checks run on the records as they stream
        through the copy, and the copy keeps a digest of every record it wrote, so verification
        reads only the target. Only into a new target collection (a refusal found mid-copy drops
        it: nothing is left behind) and not with ``shard``; otherwise the ordinary plan runs
        first (``report.notes`` says why). Verification then proves that the target holds what
        the copy read; a source written to during the copy is what ``sync`` is for.

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
    >>> report = vectorport.migrate("memory://doctest-migrate-src", "memory://doctest-migrate-dst")
    >>> report.status, report.exit_code, report.copy.records
    (<Status.VERIFIED: 'verified'>, <ExitCode.OK: 0>, 5)
    >>> src.drop(); vectorport.connect("memory://doctest-migrate-dst").drop()
    """
    started = time.monotonic()
    segment = parse_shard(shard)
    policy = MetadataPolicy.parse(metadata_policy)
    if concurrency < 1:
        raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
    if batch_size is not None and batch_size < 1:
        raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
    if resume and checkpoint is None:
        raise ConfigurationError("--resume needs --checkpoint PATH (the file of the interrupted run)")
    embedder: Embedder | None = None
    model_id: str | None = None
    if reembed:
        embedder, model_id = load_embedder(reembed)
    src, dst = _opened(source, target, source_options, target_options)
    try:
        if src.identity == dst.identity:
            raise ConfigurationError(
                f"the source and the target are the same collection ({src.label}); a migration "
                "copies into another collection: name a new table, collection or index"
            )
        transformer = Transformer(dst.capabilities.metadata, policy, text_key)
        report = MigrationReport(src.label, dst.label, segment, status=Status.PLANNED)
        ck: Checkpoint | None = None
        if checkpoint is not None:
            path = shard_path(checkpoint, segment)
            report.checkpoint = str(path)
            ck = Checkpoint(
                path, src.label, dst.label, segment, {**transformer.describe(), "reembed": model_id}
            )
            previous = Checkpoint.load(path)
            if previous is not None:
                why = previous.mismatch(ck)
                if why:
                    raise ConfigurationError(
                        f"the checkpoint {path} belongs to another migration ({why}); "
                        "use another --checkpoint path"
                    )
                if previous.complete and not plan_only:
                    log.info("%s: this migration finished earlier; verifying only", path)
                    report.already_complete = True
                    return _finish(
                        report,
                        src,
                        dst,
                        transformer,
                        previous,
                        segment,
                        verify,
                        embedder,
                        sample_queries,
                        k,
                        cap,
                        concurrency,
                        progress,
                        started,
                        copied=False,
                        digests=previous.digests if previous.single_pass else None,
                    )
                if resume:
                    ck = previous
                    if ck.single_pass and not single_pass:
                        ck.digests = None  # only a single-pass run keeps them up to date
                else:
                    log.warning(
                        "%s records an unfinished run; starting from the beginning "
                        "(pass --resume to continue it)",
                        path,
                    )
        one_pass = single_pass and _single_pass_allowed(report, dst, segment, ck, embedder)
        t0 = time.monotonic()
        plan_ = build_plan(
            src,
            dst,
            transformer,
            shard=segment,
            reembed=model_id,
            reembed_dimension=embedder.dimension if embedder is not None else None,
            cap=cap,
            progress=progress,
            total_hint=_total_hint(src.store, segment) if progress and not one_pass else None,
            scan=not one_pass,
        )
        report.plan = plan_
        report.timings["plan"] = time.monotonic() - t0
        if plan_.refused:
            report.status = Status.REFUSED
            report.timings["total"] = time.monotonic() - started
            if plan_only:
                return report
            raise PlanRefusedError(plan_, report)
        if plan_only:
            report.timings["total"] = time.monotonic() - started
            return report
        dst.ensure(plan_.target_spec)
        size = min(batch_size or DEFAULT_BATCH, dst.capabilities.max_write_batch)
        checker: PlanChecker | None = None
        digests: SegmentSums | None = None
        total = plan_.records
        if one_pass:
            checker = PlanChecker(plan_, dst, transformer, cap)
            total = _count_or_none(src.store) or 0
            digests = _copy_digests(ck, total)
            if ck is not None:
                plan_.records = ck.copied  # checked (and written) by the interrupted run
                ck.single_pass, ck.digests = True, digests
        if ck is not None:
            ck.save()
        queries: SampledQueries | None = None
        read_back: ReadBack | None = None
        if verify and _read_back_applies(dst, segment, embedder, ck):
            parts = digests.parts if digests is not None else segment_count(plan_.records)
            if digests is not None:  # the read-back is the target's exact truth for the queries
                queries = sampled_queries(src.store, dst.store, segment, sample_queries, k)
            read_back = ReadBack(dst.store, parts, exact=queries.exact if queries else None)
        t0 = time.monotonic()
        try:
            report.copy = copy_records(
                src.store,
                dst.store,
                transformer,
                shard=segment,
                batch_size=size,
                concurrency=concurrency,
                checkpoint=ck,
                retry=retry,
                embedder=embedder,
                progress=progress,
                total=total,
                scan_batch_size=size,
                checker=checker,
                digests=digests,
                on_written=read_back.written if read_back is not None else None,
            )
        except BaseException:
            if read_back is not None:
                read_back.close()  # the readers end before the stores are closed
            raise
        if read_back is not None:
            # the last batches are read back while verification lists the target's keys
            read_back.finish()
        if checker is not None:
            checker.finish()
        if report.copy.refused:
            if read_back is not None:
                read_back.close()  # before the target it reads is dropped
            _roll_back(dst, ck, report)
            report.status = Status.REFUSED
            report.timings["total"] = time.monotonic() - started
            raise PlanRefusedError(plan_, report)
        # the target's deferred index build is timed apart from the copy (and its rate)
        report.timings["copy"] = time.monotonic() - t0 - report.copy.index_seconds
        if report.copy.index_seconds >= 0.05:
            report.timings["index"] = report.copy.index_seconds
        report.status = Status.COPIED
        return _finish(
            report,
            src,
            dst,
            transformer,
            ck,
            segment,
            verify,
            embedder,
            sample_queries,
            k,
            cap,
            concurrency,
            progress,
            started,
            copied=True,
            digests=report.copy.digests,
            read_back=read_back,
            queries=queries,
        )
    finally:
        dst.close()
        src.close()


def _finish(
    report: MigrationReport,
    src: Endpoint,
    dst: Endpoint,
    transformer: Transformer,
    ck: Checkpoint | None,
    segment: tuple[int, int],
    verify: bool,
    embedder: Embedder | None,
    sample_queries: int,
    k: int,
    cap: int,
    concurrency: int,
    progress: bool,
    started: float,
    *,
    copied: bool,
    digests: SegmentSums | None = None,
    read_back: ReadBack | None = None,
    queries: SampledQueries | None = None,
) -> MigrationReport:
    report.status = Status.COPIED
    if verify:
        t0 = time.monotonic()
        report.verification = verify_stores(
            src.store,
            dst.store,
            transformer,
            source_label=src.label,
            target_label=dst.label,
            shard=segment,
            compare_vectors=embedder is None,
            sample_queries=sample_queries,
            k=k,
            cap=cap,
            concurrency=concurrency,
            progress=progress,
            total_hint=report.plan.records if report.plan else None,
            copied=digests,
            read_back=read_back,
            queries=queries,
        )
        report.timings["verify"] = time.monotonic() - t0
        report.status = report.verification.status
        if ck is not None:
            ck.verified = report.verification.ok
            ck.save()
    if not copied:
        _source_changed(report, src, dst, ck)
    elif ck is not None and ck.complete:
        ck.source_count = _count_or_none(src.store)
        ck.save()
    report.timings["total"] = time.monotonic() - started
    return report


def _read_back_applies(
    dst: Endpoint, segment: tuple[int, int], embedder: Embedder | None, ck: Checkpoint | None
) -> bool:
    """Whether the copy reads each acknowledged batch back (:mod:`._readback`): into a target
    whose writes are paced (reads then cost no copy time), in a run that writes every record
    (not a resumed one), whose records compare as digests (not re-embedded, floats kept)."""
    fresh = ck is None or (ck.cursor is None and not ck.scanned)
    return (
        fresh
        and segment[1] == 1
        and embedder is None
        and dst.capabilities.metadata.float_ulps == 0
        and write_cap_of(dst.store) is not None
    )


def _single_pass_allowed(
    report: MigrationReport,
    dst: Endpoint,
    segment: tuple[int, int],
    ck: Checkpoint | None,
    embedder: Embedder | None,
) -> bool:
    """Whether this run may check the records as it copies them (else a note says why not)."""
    why = None
    if segment[1] > 1:
        why = "a shard shares its target with the other shards, which a refusal could not roll back"
    elif dst.exists and not (ck is not None and ck.single_pass and ck.cursor is not None):
        why = "the target exists: a refusal found mid-copy could not be rolled back by dropping it"
    elif embedder is not None:
        why = "re-embedded vectors are verified record by record"
    if why is None:
        return True
    report.notes.append(f"single pass not used ({why}); the plan read the source first")
    return False


def _copy_digests(ck: Checkpoint | None, records: int) -> SegmentSums | None:
    """The digests a single-pass copy folds its records into: the interrupted run's when
    resuming one, new (sized for ``records``) when starting, ``None`` when resuming a run that
    kept none (verification then reads the source)."""
    if ck is not None and (ck.cursor is not None or ck.scanned):
        return ck.digests
    return SegmentSums(min(segment_count(records), MAX_COPY_SEGMENTS))


def _roll_back(dst: Endpoint, ck: Checkpoint | None, report: MigrationReport) -> None:
    """A single-pass copy was refused mid-way: drop the target it created, forget the run."""
    try:
        dst.store.drop()
    except Exception as exc:  # the refusal is the error to report; say what is left behind
        report.notes.append(f"the target {dst.label} could not be dropped after the refusal ({exc}); drop it")
    else:
        report.notes.append(
            f"the single-pass copy met records {dst.store.name} cannot take after "
            f"{report.copy.records if report.copy else 0} records; the target it had created was "
            "dropped: nothing was left behind"
        )
    if ck is not None:
        ck.path.unlink(missing_ok=True)


def _count_or_none(store: Any) -> int | None:
    try:
        return int(store.count())
    except Exception:  # only for the "source changed since" hint
        return None


def _source_changed(report: MigrationReport, src: Endpoint, dst: Endpoint, ck: Checkpoint | None) -> None:
    """A finished migration run again: when the source changed since, say so and name ``sync``
    (``migrate`` does not copy a finished migration again)."""
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
        f"finished migration again; to bring the target up to date run: vectorport sync {src_url} "
        f"{dst_url} (add --delete to delete the records gone from the source)"
    )


def plan(
    source: StoreLike,
    target: StoreLike,
    *,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    shard: str | tuple[int, int] | None = None,
    cap: int = DEFAULT_CAP,
    progress: bool = False,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> MigrationPlan:
    """The plan of a migration, without writing anything. See :func:`migrate`.

    >>> import vectorport
    >>> from vectorport.migrate import plan
    >>> src = vectorport.connect("memory://doctest-plan", dimension=2)
    >>> _ = src.upsert([vectorport.Record("a", [1, 0], {"author": {"name": "ada"}})])
    >>> p = plan("memory://doctest-plan", "memory://doctest-plan-dst")
    >>> p.records, p.refused, p.target_exists
    (1, False, False)
    >>> src.drop()
    """
    segment = parse_shard(shard)
    src, dst = _opened(source, target, source_options, target_options)
    try:
        transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
        return build_plan(src, dst, transformer, shard=segment, cap=cap, progress=progress)
    finally:
        dst.close()
        src.close()


def verify(
    source: StoreLike,
    target: StoreLike,
    *,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    shard: str | tuple[int, int] | None = None,
    sample_queries: int = 20,
    k: int = 10,
    tolerance: float = VECTOR_TOLERANCE,
    cap: int = DEFAULT_CAP,
    concurrency: int = 4,
    progress: bool = False,
    method: str = "auto",
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> VerifyReport:
    """Compare ``target`` with ``source`` after the declared transforms; see :class:`VerifyReport`.

    Pass the ``metadata_policy`` and ``text_key`` the migration used, so the expected metadata
    is what that migration wrote. ``method``: ``digest`` (both stores read once, in parallel
    segments where the backend has them, then only differing key segments compared record by
    record), ``keyed`` (every source record fetched from the target by key) or ``auto``
    (digest, except for shards and targets that may round metadata floats).
    """
    segment = parse_shard(shard)
    src, dst = _opened(source, target, source_options, target_options)
    try:
        if dst.naming is not None and dst.naming.refused:
            raise ConfigurationError(f"the target cannot exist: {dst.naming.reason()}")
        if not dst.exists:
            raise ConfigurationError(f"the target {dst.label} does not exist; nothing to verify")
        transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
        return verify_stores(
            src.store,
            dst.store,
            transformer,
            source_label=src.label,
            target_label=dst.label,
            shard=segment,
            sample_queries=sample_queries,
            k=k,
            tolerance=tolerance,
            cap=cap,
            concurrency=concurrency,
            progress=progress,
            method=method,
        )
    finally:
        dst.close()
        src.close()


def default_checkpoint(source: str, target: str) -> Path:
    """Where the CLI keeps a migration's checkpoint when ``--checkpoint`` is not given:
    ``$VECTORPORT_STATE_DIR`` (default ``$XDG_STATE_HOME/vectorport`` or
    ``~/.local/state/vectorport``) ``/migrations/<hash of the two URLs>.json`` (plus the shard
    suffix of :func:`shard_path`)."""
    import hashlib

    digest = hashlib.sha256(f"{source}\n{target}".encode()).hexdigest()[:16]
    return state_dir() / "migrations" / f"{digest}.json"


def state_dir() -> Path:
    """``$VECTORPORT_STATE_DIR``, else ``$XDG_STATE_HOME/vectorport``, else
    ``~/.local/state/vectorport``: where the CLI keeps checkpoints and sync states."""
    base = os.environ.get("VECTORPORT_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "vectorport"
    )
    return Path(base)
