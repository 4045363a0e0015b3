"""``export(URL, DIR)``: a store's records as Parquet parts plus a manifest; verified by reading
the snapshot back through ``parquet://DIR`` and comparing it with the source."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from .._exit import Status
from .._paths import writable_dir
from .._protocol import VectorStore
from .._report import Report
from .._url import mask_url
from ..exceptions import ConfigurationError
from ..migrate._endpoints import StoreLike, open_source
from ..migrate._progress import ProgressMode
from ..migrate._transform import Transformer
from ..migrate._verify import VerifyReport, verify_stores

__all__ = ["ExportReport", "expecting", "export", "snapshot_url", "write_segment"]

SCAN_BATCH = 1000


def snapshot_url(directory: str | os.PathLike[str], expect_digest: str | None = None) -> str:
    """The ``parquet://`` URL of a snapshot directory (absolute, so it means the same anywhere
    on this machine, or on a cluster's shared file system); with ``expect_digest`` (the
    snapshot digest export printed), the store it opens refuses any other snapshot."""
    url = "parquet://" + quote(str(Path(directory).expanduser().resolve()))
    return url if expect_digest is None else expecting(url, expect_digest)


def expecting(url: str, expect_digest: str) -> str:
    """``url`` (a ``parquet://`` snapshot) with the ``expect_digest`` parameter set, so whatever
    opens it — a local run or Ray workers — refuses a snapshot with another digest."""
    if urlsplit(url).scheme != "parquet":
        raise ConfigurationError(
            f"an expected digest checks a snapshot, and {mask_url(url)} is not one: give it for the "
            "parquet://DIR store (or import DIR)"
        )
    # (urlunsplit would drop the ``//`` of ``parquet:///abs/dir``, a URL with no host)
    head, _, query = url.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "expect_digest"]
    return f"{head}?{urlencode([*kept, ('expect_digest', expect_digest)])}"


def source_layout(store: VectorStore) -> dict[str, Any] | None:
    """The source's layout description, when its backend has layouts (kept in the manifest so a
    restore can name where the records came from)."""
    layout = getattr(store, "layout", None)
    to_dict = getattr(layout, "to_dict", None)
    if callable(to_dict):
        described = to_dict()
        return described if isinstance(described, dict) else None
    name = getattr(store, "layout_name", None)
    return {"name": name} if isinstance(name, str) else None


def write_segment(
    store: VectorStore,
    directory: Path,
    segment: tuple[int, int],
    *,
    max_part_bytes: int | None = None,
    batch_size: int = SCAN_BATCH,
) -> list[Any]:
    """Write segment ``segment`` of ``store`` as parts named ``part-<i>-<nnnnn>.parquet``; the
    :class:`~vectorport.backends.parquet._format.PartInfo` of each. Workers of a parallel export
    each call this for their own segments."""
    from ..backends.parquet._format import DEFAULT_PART_BYTES, PartWriter

    index, parts = segment
    writer = PartWriter(
        directory,
        store.spec.dimension,
        prefix=f"part-{index:05d}" if parts > 1 else "part",
        max_bytes=max_part_bytes or DEFAULT_PART_BYTES,
    )
    for page in store.scan(batch_size=batch_size, segment=segment):
        writer.add(page.records)
    writer.flush()
    return list(writer.parts)


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
        }


def prepare_directory(directory: str | os.PathLike[str], overwrite: bool) -> Path:
    """An empty directory to export into: created when missing; a non-empty one is refused
    unless ``overwrite`` (then only a previous snapshot's files are removed)."""
    from ..backends.parquet._format import MANIFEST

    path = Path(directory).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"{path} is a file; export writes a directory of Parquet parts")
    writable_dir(path, "snapshot directory")
    present = sorted(p.name for p in path.iterdir())
    if not present:
        return path
    ours = [n for n in present if n == MANIFEST or (n.lstrip(".").startswith("part") and ".parquet" in n)]
    if not overwrite or len(ours) != len(present):
        what = "a snapshot" if MANIFEST in present else f"{len(present)} files, e.g. {present[0]!r}"
        hint = "pass --overwrite to replace it" if len(ours) == len(present) else "name an empty directory"
        raise ConfigurationError(f"{path} is not empty (it holds {what}); {hint}")
    for name in ours:
        target = path / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    return path


def finish_snapshot(report: ExportReport, store: VectorStore, directory: Path, parts: Sequence[Any]) -> None:
    """Write the manifest of ``parts`` (from every segment); fill ``report``'s count, parts,
    bytes, content digest and snapshot digest."""
    from ..backends.parquet._format import SHA256_PREFIX, Manifest, fold

    spec = store.spec
    ordered = sorted(parts, key=lambda p: p.file)
    count = sum(p.records for p in ordered)
    digest = fold([p.digest for p in ordered])
    written = Manifest(
        dimension=spec.dimension,
        metric=spec.metric.value,
        embedding_model=spec.embedding_model,
        name=spec.name,
        count=count,
        digest=digest,
        parts=list(ordered),
        source=report.source,
        source_layout=source_layout(store),
    ).save(directory)
    report.count, report.parts, report.digest = count, len(ordered), digest
    report.bytes = sum(p.bytes for p in ordered)
    report.snapshot_digest = SHA256_PREFIX + hashlib.sha256(written.read_bytes()).hexdigest()


def verify_snapshot(
    store: VectorStore,
    source_label: str,
    directory: Path,
    *,
    sample_queries: int,
    progress: ProgressMode | bool,
) -> VerifyReport:
    """Compare the snapshot, read back as ``parquet://DIR``, with its source."""
    from .._registry import connect

    snap = connect(snapshot_url(directory))
    try:
        return verify_stores(
            store,
            snap,
            Transformer(snap.capabilities.metadata),
            source_label=source_label,
            target_label=snapshot_url(directory),
            sample_queries=sample_queries,
            progress=progress,
        )
    finally:
        snap.close()


def export(
    source: StoreLike,
    directory: str | os.PathLike[str],
    *,
    max_part_bytes: int | None = None,
    batch_size: int = SCAN_BATCH,
    overwrite: bool = False,
    verify: bool = True,
    sample_queries: int = 20,
    progress: ProgressMode | bool = False,
    source_options: Mapping[str, Any] | None = None,
) -> ExportReport:
    """Write every record of ``source`` to ``directory`` as a portable snapshot.

    The snapshot is Parquet parts of about ``max_part_bytes`` each (default 128 MiB) and a
    ``_manifest.json`` (dimension, metric, embedding model, source layout, count, per-part
    SHA-256 and content digests). DuckDB, pandas and Spark read the parts as they are;
    ``vectorport import DIR URL`` (or ``migrate parquet://DIR URL``) loads it into any backend.
    With ``verify`` the snapshot is read back and compared with the source, record by record.
    """
    from ..backends.parquet._format import DEFAULT_PART_BYTES

    started = time.monotonic()
    if max_part_bytes is not None and max_part_bytes < 1:
        raise ConfigurationError(f"max_part_bytes must be positive, got {max_part_bytes}")
    src = open_source(source, **dict(source_options or {}))
    try:
        path = prepare_directory(directory, overwrite)
        report = ExportReport(src.label, str(path.resolve()))
        parts = write_segment(
            src.store,
            path,
            (0, 1),
            max_part_bytes=max_part_bytes or DEFAULT_PART_BYTES,
            batch_size=batch_size,
        )
        finish_snapshot(report, src.store, path, parts)
        report.timings["export"] = time.monotonic() - started
        if verify:
            t0 = time.monotonic()
            report.verification = verify_snapshot(
                src.store, src.label, path, sample_queries=sample_queries, progress=progress
            )
            report.timings["verify"] = time.monotonic() - t0
        report.timings["total"] = time.monotonic() - started
        return report
    finally:
        src.close()


def label(directory: str | os.PathLike[str]) -> str:
    return mask_url(snapshot_url(directory))
