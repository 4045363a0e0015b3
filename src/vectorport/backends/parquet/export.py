"""Writing a snapshot directory, as ``vectorport export`` does: the parquet backend's own API for
it (the format — parts, manifest, write lock — is this backend's; :mod:`vectorport.snapshot` is
the command). Imports pyarrow."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._gc import bulk_allocations
from ..._paths import writable_dir
from ..._protocol import VectorStore
from ...exceptions import Advice, Advised, ConfigurationError
from ._format import (
    DEFAULT_PART_BYTES,
    LOCK,
    MANIFEST,
    SHA256_PREFIX,
    Manifest,
    PartInfo,
    PartWriter,
    fold,
    snapshot_file,
)
from ._lock import WriteLock

__all__ = [
    "DEFAULT_PART_BYTES",
    "PartInfo",
    "WriteLock",
    "Written",
    "export_directory",
    "finish_snapshot",
    "prepare_directory",
    "replaceable",
    "source_layout",
    "write_segment",
]

SCAN_BATCH = 1000


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


@bulk_allocations()
def write_segment(
    store: VectorStore,
    directory: Path,
    segment: tuple[int, int],
    *,
    max_part_bytes: int | None = None,
    batch_size: int = SCAN_BATCH,
    on_page: Callable[[int], None] | None = None,
) -> list[Any]:
    """Write segment ``segment`` of ``store`` as parts named ``part-<i>-<nnnnn>.parquet``; the
    :class:`~vectorport.backends.parquet._format.PartInfo` of each. Workers of a parallel export
    each call this for their own segments."""
    index, parts = segment
    writer = PartWriter(
        directory,
        store.spec.dimension,
        prefix=f"part-{index:05d}" if parts > 1 else "part",
        max_bytes=max_part_bytes or DEFAULT_PART_BYTES,
    )
    for page in store.scan(batch_size=batch_size, segment=segment):
        writer.add(page.records)
        if on_page is not None:
            on_page(len(page.records))
    writer.flush()
    return list(writer.parts)


def replaceable(path: Path, overwrite: bool) -> list[str]:
    """The files an export into ``path`` removes first (a previous snapshot's, with
    ``overwrite``); a directory holding anything else, or a snapshot without ``overwrite``, is
    refused. Writes nothing; the write lock's file is no content."""
    present = sorted(p.name for p in path.iterdir() if p.name != LOCK)
    ours = [n for n in present if snapshot_file(n)]
    if present and (not overwrite or len(ours) != len(present)):
        what = "a snapshot" if MANIFEST in present else f"{len(present)} files, e.g. {present[0]!r}"
        hint = (
            Advised.of("pass {} to replace it", Advice("overwrite", True))
            if len(ours) == len(present)
            else "name an empty directory"
        )
        raise ConfigurationError(Advised.of("{} is not empty (it holds {}); {}", path, what, hint))
    return ours


def prepare_directory(path: Path, overwrite: bool) -> None:
    """Make ``path`` (whose write lock the caller holds) an empty directory to export into:
    :func:`replaceable` checked again under the lock, then a previous snapshot removed."""
    for name in replaceable(path, overwrite):
        target = path / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()


def export_directory(directory: str | os.PathLike[str]) -> Path:
    """The directory an export writes, created when missing (resolved: workers see one path)."""
    path = Path(directory).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigurationError(f"{path} is a file; export writes a directory of Parquet parts")
    return writable_dir(path, "snapshot directory").resolve()


@dataclass(frozen=True)
class Written:
    """What a snapshot's manifest says of it once written."""

    count: int
    parts: int
    bytes: int
    digest: str
    """The content digest: the same for the same records, however they are split into parts."""
    snapshot_digest: str
    """``sha256:`` + the SHA-256 of ``_manifest.json`` (which holds every part's SHA-256)."""


def finish_snapshot(store: VectorStore, directory: Path, parts: Sequence[PartInfo], source: str) -> Written:
    """Write the manifest of ``parts`` (from every segment) of ``store``'s records, exported from
    ``source`` (a label); what it says of the snapshot."""
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
        source=source,
        source_layout=source_layout(store),
    ).save(directory)
    snapshot_digest = SHA256_PREFIX + hashlib.sha256(written.read_bytes()).hexdigest()
    return Written(count, len(ordered), sum(p.bytes for p in ordered), digest, snapshot_digest)
