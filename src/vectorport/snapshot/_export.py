"""``export(URL, DIR)``: a store's records as Parquet parts plus a manifest, checked by reading
the snapshot back through ``parquet://DIR`` and comparing it with the source.

The export is stages over one context, as a migration is (:mod:`vectorport.migrate._engine`),
and the same runners place its work::

    export(source, DIR, runner=…, **options)       options: ExportOptions (typed, frozen)
      │ runner.check(options, source, DIR)         refuse what the runner cannot honour
      │ placement.whole → runner.delegate(…)       a store one process may open: one task
      ▼
    ExportContext ── directory ── write ───────────── manifest ── verify
                     (empty, or   segments here, or   (driver)    the one verification of
                     overwrite)   one task each                   source against parquet://DIR
                                  (runner.map)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .._exit import Status
from .._report import Report
from .._url import mask_url
from ..backends.parquet._url import expecting, snapshot_url
from ..engine._endpoints import Endpoint, StoreLike, count_or_none, open_source, probe_target
from ..engine._progress import Progress
from ..engine._runner import LocalRunner, Placement, Runner, worker_info
from ..engine._transform import Transformer
from ..engine._whole import delegated, note_pid
from ..exceptions import ConfigurationError
from ..migrate._options import MigrateOptions
from ..verify._placed import Pair, verify_placed
from ..verify._verify import VerifyReport
from ._options import ExportOptions

if TYPE_CHECKING:
    from ..backends.parquet.export import PartInfo

__all__ = [
    "ExportContext",
    "ExportReport",
    "expecting",
    "export",
    "snapshot_url",
    "write_parts",
]


@dataclass
class ExportReport(Report):
    """What ``export`` wrote and how it checked it."""

    SCHEMA: ClassVar[str] = "vectorport.export/1"

    source: str
    directory: str
    count: int = 0
    parts: int = 0
    bytes: int = 0
    digest: str = ""
    """The content digest: the same for the same records, however they are split into parts."""
    snapshot_digest: str = ""
    """``sha256:`` + the SHA-256 of ``_manifest.json`` (which holds every part's SHA-256): give it
    to ``import``/``verify`` (``--expect-digest``) to refuse any other or altered snapshot."""
    workers: int = 1
    engine: str = "local"
    timings: dict[str, float] = field(default_factory=dict)
    verification: VerifyReport | None = None
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    """Each Ray task's segment, node, records and rate (``engine`` ``ray``)."""
    options: dict[str, Any] = field(default_factory=dict)
    """The run's :class:`~._options.ExportOptions`, as JSON values."""
    notes: list[str] = field(default_factory=list)

    def placed(self, engine: dict[str, Any], note: str) -> None:
        self.engine = str(engine["engine"])
        self.workers = int(engine.get("workers", 1))
        self.per_worker = list(engine.get("per_worker", []))
        self.notes.append(note)

    @property
    def status(self) -> Status:
        return Status.EXPORTED if self.verification is None else self.verification.status

    @property
    def rate(self) -> float:
        seconds = self.timings.get("export", 0.0)
        return self.count / seconds if seconds > 0 else 0.0

    def sections(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "directory": self.directory,
            "url": snapshot_url(self.directory),
            "count": self.count,
            "parts": self.parts,
            "bytes": self.bytes,
            "digest": self.digest,
            "snapshot_digest": self.snapshot_digest,
            "engine": self.engine,
            "workers": self.workers,
            "records_per_second": round(self.rate, 1),
            "per_worker": list(self.per_worker),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "verification": None if self.verification is None else self.verification.to_dict(),
            "options": dict(self.options),
            "notes": list(self.notes),
        }


@dataclass
class ExportContext:
    """One export run: the source, the typed options, the directory, the report being built."""

    source: StoreLike
    options: ExportOptions
    placement: Placement
    src: Endpoint
    directory: Path
    report: ExportReport
    started: float
    segments: int = 1
    """Scan segments of the source, each written as its own series of parts."""


def write_parts(ctx: ExportContext, on_page: Callable[[int], None] | None = None) -> list[PartInfo]:
    """Every segment of the export written in this process, one after the other."""
    from ..backends.parquet.export import write_segment  # pyarrow: only when an export runs

    o, parts = ctx.options, []
    for i in range(ctx.segments):
        parts += write_segment(
            ctx.src.store,
            ctx.directory,
            (i, ctx.segments),
            max_part_bytes=o.max_part_bytes,
            batch_size=o.batch_size,
            on_page=on_page,
        )
    return parts


def export(
    source: StoreLike, directory: str | os.PathLike[str], *, runner: Runner | None = None, **options: Any
) -> ExportReport:
    """Write every record of ``source`` to ``directory`` as a portable snapshot.

    The snapshot is Parquet parts of about ``max_part_bytes`` each (default 128 MiB) and a
    ``_manifest.json`` (dimension, metric, embedding model, source layout, count, per-part
    SHA-256 and content digests). DuckDB, pandas and Spark read the parts as they are;
    ``vectorport import DIR URL`` (or ``migrate parquet://DIR URL``) loads it into any backend.
    With ``verify`` the snapshot is read back and compared with the source, record by record.
    ``options`` are the fields of :class:`~vectorport.snapshot.ExportOptions`; ``runner``:
    where the work runs (default: this process; :class:`vectorport.ray.RayRunner`: Ray tasks,
    each writing the parts of its scan segments).
    """
    opts = ExportOptions(**options)
    run = runner if runner is not None else LocalRunner()
    placement = run.check(opts, source, snapshot_url(directory))
    whole = delegated(run, placement, export, _exported, source, str(directory), opts)
    if whole is not None:
        assert isinstance(whole, ExportReport)
        return whole
    started = time.monotonic()
    src = open_source(source, **dict(opts.source_options))
    try:
        # the backend's own snapshot writer (pyarrow: only when an export runs)
        from ..backends.parquet.export import WriteLock, export_directory, prepare_directory, replaceable

        path = export_directory(directory)
        replaceable(path, opts.overwrite)  # a refused export leaves not even a lock file
        # a parquet:// store writing this directory (another process, or this one) is refused
        # before anything is removed, and holds off while the export writes
        with WriteLock(path, wait=False):
            prepare_directory(path, opts.overwrite)
            report = ExportReport(src.label, str(path), options=opts.to_dict())
            segments = opts.segments or placement.shards
            ctx = ExportContext(source, opts, placement, src, path, report, started, segments)
            return _stages(ctx, run)
    finally:
        src.close()


def _manifest(report: ExportReport, ctx: ExportContext, parts: list[PartInfo]) -> None:
    """The snapshot's manifest, written by the parquet backend; the report says what it holds."""
    from ..backends.parquet.export import finish_snapshot

    written = finish_snapshot(ctx.src.store, ctx.directory, parts, report.source)
    report.count, report.parts, report.bytes = written.count, written.parts, written.bytes
    report.digest, report.snapshot_digest = written.digest, written.snapshot_digest


def _exported(report: ExportReport) -> int:
    return report.count


def _stages(ctx: ExportContext, runner: Runner) -> ExportReport:
    """write (here, or one task per segment) → manifest → verify (the one verification)."""
    report = ctx.report
    parts = _write(ctx, runner)
    _describe(report, ctx.placement)
    _manifest(report, ctx, parts)
    report.timings["export"] = time.monotonic() - ctx.started
    if ctx.options.verify:
        t0 = time.monotonic()
        report.verification = _verify(ctx, runner)
        report.timings["verify"] = time.monotonic() - t0
    report.timings["total"] = time.monotonic() - ctx.started
    return report


def _write(ctx: ExportContext, runner: Runner) -> list[PartInfo]:
    """Every segment's parts: here, one after the other, or one task per segment, each writing
    into the directory (which every task must reach: a shared file system on a real cluster)."""
    o, n = ctx.options, ctx.segments
    with Progress("export", count_or_none(ctx.src.store), enabled=o.progress) as bar:
        if ctx.placement.here:
            return write_parts(ctx, on_page=bar.advance)
        if not isinstance(ctx.source, str):
            raise ConfigurationError(f"engine {runner.name} opens the source in its tasks: pass a URL")
        started = time.monotonic()
        parts: list[PartInfo] = []
        workers = []
        calls = [(ctx.source, o, str(ctx.directory), (i, n)) for i in range(n)]
        for got, worker in runner.map(export_segment, calls):  # the bar follows the tasks
            parts += got
            workers.append(worker)
            bar.advance(worker["records"])
    ctx.placement.ran(workers, time.monotonic() - started)
    return parts


def export_segment(
    source: str, options: ExportOptions, directory: str, segment: tuple[int, int]
) -> tuple[list[PartInfo], dict[str, Any]]:
    """One task: the parts of one scan segment of an export's source."""
    from ..backends.parquet.export import write_segment

    started = time.monotonic()
    note_pid(segment)
    folder = Path(directory)
    # a retried task starts its segment again: the parts of a lost attempt go first, so none of
    # them stays beside the manifest for DuckDB to read
    for stale in [
        *folder.glob(f"part-{segment[0]:05d}-*.parquet"),
        *folder.glob(f".part-{segment[0]:05d}-*"),
    ]:
        stale.unlink(missing_ok=True)
    src = open_source(source, **dict(options.source_options))
    try:
        parts = write_segment(
            src.store,
            folder,
            segment,
            max_part_bytes=options.max_part_bytes,
            batch_size=options.batch_size,
        )
    finally:
        src.close()
    records = sum(p.records for p in parts)
    return parts, worker_info(f"export {segment[0]}/{segment[1]}", records, started)


def _describe(report: ExportReport, placement: Placement) -> None:
    engine = placement.describe()
    report.engine = str(engine["engine"])
    report.workers = int(engine.get("workers", 1))
    report.per_worker = list(engine.get("per_worker", []))


def _verify(ctx: ExportContext, runner: Runner) -> VerifyReport:
    """The snapshot, read back as ``parquet://DIR``, against its source: the one verification,
    placed as the export was."""
    o, url = ctx.options, snapshot_url(ctx.directory)
    dst = probe_target(url, ctx.src.store.spec.name)
    try:
        check = MigrateOptions(
            sample_queries=o.sample_queries,
            k=o.k,
            progress=o.progress,
            cap=o.cap,
            source_options=o.source_options,
        )
        pair = Pair(ctx.source, url, ctx.src, dst, Transformer(dst.capabilities.metadata))
        return verify_placed(runner, ctx.placement, pair, check, progress=o.progress)
    finally:
        dst.close()


def label(directory: str | os.PathLike[str]) -> str:
    return mask_url(snapshot_url(directory))
