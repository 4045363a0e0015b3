"""Incremental indexing with the store as the only source of truth.

One run:

1. **Read the store's state**: one metadata-only scan groups the ingested chunks by their
   ``source`` (records without ``source``/``doc_hash`` metadata are not ours and are left alone).
2. **Per file**: hash its bytes. A document is *current* when chunks ``#chunk0 … #chunk{n-1}``
   all exist with this ``doc_hash``, this ``embedding_model`` and this chunking, ``n`` being
   their ``total_chunks``: it is skipped without parsing, tokenizing or embedding. Extra keys next
   to a current document (a run interrupted between writing and deleting) are deleted, still
   without embedding. Anything else is (re)chunked; chunks whose text is unchanged reuse their
   stored vector, the rest are embedded in batches across documents.
3. **Write, then delete**: new chunks are upserted (full replace by key), then the document's
   other keys are deleted, so a document is never absent from search while it is updated and a
   shrunken document leaves no stale chunk.
4. **Prune**: documents under the run's paths whose file is gone lose all their chunks.

Every step is idempotent and a killed run leaves only states that step 2 recognises, so
re-running converges; a second run over an unchanged tree makes no embedding call.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, NamedTuple

import numpy as np
import numpy.typing as npt

from .._embedder import Embedder
from .._exit import Status
from .._features import bulk_load_of
from .._models import Record
from .._protocol import VectorStore
from .._report import Report
from .chunker import Chunk, Chunker, ChunkingConfig
from .compat import check_embedder
from .corpus import Corpus, SourceFile
from .documents import Document, sha256_hex
from .embedders import same_model
from .loaders import loader_for

__all__ = ["DocumentOutcome", "Indexer", "IngestReport", "ProgressFn", "chunk_key", "read_state"]

log = logging.getLogger("vectorport.ingest")

ProgressFn = Callable[[str, int, int | None], None]
"""``progress(phase, done, total)``; phases: ``scan``, ``documents``, ``embed``, ``prune``."""

TEXT_FIELD_LIMIT = 200
"""Characters kept of ``title`` and ``section`` (S3 Vectors caps filterable metadata at 2 KB)."""


def chunk_key(source: str, index: int) -> str:
    """``docs/intro.md#chunk3``."""
    return f"{source}#chunk{index}"


class _Entry(NamedTuple):
    doc_hash: str
    model: str | None
    chunking: str | None
    total: int | None
    content_hash: str | None


def read_state(store: VectorStore, progress: ProgressFn | None = None) -> dict[str, dict[str, _Entry]]:
    """``source → key → facts`` for every ingested chunk, from one metadata-only scan."""
    state: dict[str, dict[str, _Entry]] = {}
    seen = 0
    for page in store.scan(include=["metadata"]):
        for rec in page:
            meta = rec.metadata
            source, doc_hash = meta.get("source"), meta.get("doc_hash")
            if not (isinstance(source, str) and isinstance(doc_hash, str)):
                continue
            total = meta.get("total_chunks")
            state.setdefault(source, {})[rec.key] = _Entry(
                doc_hash,
                _str_or_none(meta.get("embedding_model")),
                _str_or_none(meta.get("chunking")),
                int(total) if isinstance(total, int | float) and not isinstance(total, bool) else None,
                _str_or_none(meta.get("content_hash")),
            )
        seen += len(page)
        if progress:
            progress("scan", seen, None)
    return state


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class DocumentOutcome:
    """What happened to one document."""

    source: str
    action: str
    """``added``, ``updated``, ``removed``, ``skipped``, ``failed``."""
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    deleted: int = 0
    error: str | None = None


@dataclass
class IngestReport(Report):
    """Summary of a run; ``to_dict()`` is the ``--json`` output."""

    SCHEMA: ClassVar[str] = "vectorport.ingest/1"

    store: str
    embedding_model: str
    dimension: int
    chunking: str
    added: int = 0
    updated: int = 0
    removed: int = 0
    skipped: int = 0
    failed: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    embedding_calls: int = 0
    seconds: float = 0.0
    documents: list[DocumentOutcome] = field(default_factory=list)

    def record(self, outcome: DocumentOutcome) -> None:
        self.documents.append(outcome)
        if outcome.action in ("added", "updated", "removed", "skipped", "failed"):
            setattr(self, outcome.action, getattr(self, outcome.action) + 1)
        self.chunks_deleted += outcome.deleted

    @property
    def status(self) -> Status:
        """``ingested``, or ``partial`` when some files could not be read (the rest was)."""
        return Status.PARTIAL if self.failed else Status.INGESTED

    def sections(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Pending:
    source: str
    doc: Document
    chunks: list[Chunk]
    reuse: dict[str, npt.NDArray[np.float32]]
    stale: list[str]
    action: str


class Indexer:
    """Keep a collection in step with a folder of documents.

    Parameters
    ----------
    store
        The collection (bound, see :func:`vectorport.connect`); its dimension must be the
        embedder's, and its recorded model, if any, the embedder's ``model_id``.
    embedder
        See :mod:`vectorport.ingest.embedders`.
    chunking
        Token budget; bounded by the embedder's input limit.
    flush_texts
        Texts collected across documents before embedding and writing them together.

    >>> import vectorport
    >>> from vectorport.ingest import HashEmbedder, Indexer
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "a.md").write_text("# A\\n\\nSome text about vectors.")
    >>> e = HashEmbedder(16)
    >>> store = vectorport.connect("memory://doctest-indexer", dimension=16, embedding_model=e.model_id)
    >>> Indexer(store, e).run(Corpus(root)).added
    1
    >>> report = Indexer(store, e).run(Corpus(root))
    >>> report.skipped, report.embedding_calls
    (1, 0)
    >>> store.drop()
    """

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        *,
        chunking: ChunkingConfig | None = None,
        flush_texts: int | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.chunker = Chunker(embedder.count_tokens, chunking, embedder.max_tokens)
        self.signature = self.chunker.config.signature
        self.flush_texts = flush_texts or max(256, embedder.batch_size * 4)
        self.model_id = embedder.model_id
        self._same: dict[str, bool] = {}

    def run(
        self,
        corpus: Corpus,
        *,
        prune: bool = True,
        progress: ProgressFn | None = None,
    ) -> IngestReport:
        """Ingest ``corpus``: add new, update changed, skip current, remove deleted documents."""
        started = time.perf_counter()
        check_embedder(self.store, self.embedder)
        report = IngestReport(self.store.url.masked, self.model_id, self.store.spec.dimension, self.signature)
        state = read_state(self.store, progress)
        files = corpus.files()
        present = {f.source for f in files}
        pending: list[_Pending] = []
        pending_texts = 0
        # A first ingest is a bulk load (pgvector builds its HNSW index once, at the end).
        with bulk_load_of(self.store, None if state else len(files)):
            for done, file in enumerate(files, 1):
                item = self._plan(file, state.get(file.source, {}), report)
                if item is not None:
                    pending.append(item)
                    pending_texts += len(item.chunks) - len(item.reuse)
                    if pending_texts >= self.flush_texts:
                        self._flush(pending, report, progress)
                        pending, pending_texts = [], 0
                if progress:
                    progress("documents", done, len(files))
            self._flush(pending, report, progress)
        if prune:
            gone = sorted(s for s in state if s not in present and corpus.in_scope(s))
            for i, source in enumerate(gone, 1):
                keys = sorted(state[source])
                self.store.delete(keys)
                report.record(DocumentOutcome(source, "removed", 0, deleted=len(keys)))
                if progress:
                    progress("prune", i, len(gone))
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _same_model(self, model: str | None) -> bool:
        """Whether a chunk's recorded model is the embedder's (also under an id recorded before,
        e.g. a model folder by its name before folders were recorded by their path)."""
        if model is None:
            return False
        if model not in self._same:
            self._same[model] = same_model(model, self.model_id)
        return self._same[model]

    # ------------------------------------------------------------------ per document
    def _current_keys(self, source: str, entries: dict[str, _Entry], doc_hash: str) -> set[str] | None:
        good = {
            k: e
            for k, e in entries.items()
            if e.doc_hash == doc_hash and self._same_model(e.model) and e.chunking == self.signature
        }
        totals = {e.total for e in good.values()}
        if len(totals) != 1:
            return None
        total = totals.pop()
        if total is None:
            return None
        expected = {chunk_key(source, i) for i in range(total)}
        return expected if expected <= good.keys() else None

    def _plan(self, file: SourceFile, entries: dict[str, _Entry], report: IngestReport) -> _Pending | None:
        try:
            data = file.path.read_bytes()
        except OSError as exc:
            report.record(DocumentOutcome(file.source, "failed", error=f"{type(exc).__name__}: {exc}"))
            return None
        doc_hash = sha256_hex(data)
        current = self._current_keys(file.source, entries, doc_hash)
        if current is not None:
            extra = sorted(entries.keys() - current)
            if extra:
                # A run stopped between writing and deleting: finish it, nothing to embed.
                self.store.delete(extra)
                report.record(DocumentOutcome(file.source, "updated", len(current), deleted=len(extra)))
            else:
                report.record(DocumentOutcome(file.source, "skipped", len(current)))
            return None
        loader = loader_for(file.path)
        assert loader is not None
        try:
            doc = loader(data, file.source, doc_hash)
            chunks = self.chunker.chunk(doc)
        except Exception as exc:  # one unreadable file must not stop the run
            log.warning("cannot read %s: %s", file.source, exc)
            report.record(DocumentOutcome(file.source, "failed", error=f"{type(exc).__name__}: {exc}"))
            return None
        new_keys = {chunk_key(file.source, c.index) for c in chunks}
        stale = sorted(entries.keys() - new_keys)
        action = "updated" if entries else "added"
        if not chunks:
            if stale:
                self.store.delete(stale)
            report.record(
                DocumentOutcome(file.source, "updated" if entries else "skipped", 0, deleted=len(stale))
            )
            return None
        return _Pending(file.source, doc, chunks, self._reusable(entries, chunks), stale, action)

    def _reusable(
        self, entries: dict[str, _Entry], chunks: list[Chunk]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Stored vectors of unchanged chunk texts (same model), by content hash."""
        wanted = {c.content_hash for c in chunks}
        keys = [k for k, e in entries.items() if self._same_model(e.model) and e.content_hash in wanted]
        out: dict[str, npt.NDArray[np.float32]] = {}
        if not keys:
            return out
        for rec in self.store.get(keys, include=["vector", "metadata"]):
            h = rec.metadata.get("content_hash")
            if isinstance(h, str) and rec.vector is not None and h not in out:
                out[h] = np.asarray(rec.vector, dtype=np.float32)
        return out

    # ------------------------------------------------------------------ batch write
    def _flush(self, pending: list[_Pending], report: IngestReport, progress: ProgressFn | None) -> None:
        if not pending:
            return
        texts: dict[str, str] = {}
        for item in pending:
            for c in item.chunks:
                if c.content_hash not in item.reuse:
                    texts.setdefault(c.content_hash, c.text)
        vectors: dict[str, npt.NDArray[np.float32]] = {}
        if texts:
            order = list(texts)
            matrix = self.embedder.embed_documents([texts[h] for h in order])
            vectors = {h: matrix[i] for i, h in enumerate(order)}
            report.embedding_calls += math.ceil(len(order) / self.embedder.batch_size)
            report.chunks_embedded += len(order)
            if progress:
                progress("embed", report.chunks_embedded, None)
        records: list[Record] = []
        for item in pending:
            embedded = 0
            for c in item.chunks:
                vec = item.reuse.get(c.content_hash)
                if vec is None:
                    vec = vectors[c.content_hash]
                    embedded += 1
                records.append(Record(chunk_key(item.source, c.index), vec, self._metadata(item, c), c.text))
            reused = len(item.chunks) - embedded
            report.chunks_reused += reused
            report.record(
                DocumentOutcome(item.source, item.action, len(item.chunks), embedded, reused, len(item.stale))
            )
        report.chunks_written += self.store.upsert(records)
        stale = [k for item in pending for k in item.stale]
        if stale:
            self.store.delete(stale)

    def _metadata(self, item: _Pending, chunk: Chunk) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "source": item.source,
            "chunk_index": chunk.index,
            "total_chunks": len(item.chunks),
            "content_hash": chunk.content_hash,
            "doc_hash": item.doc.doc_hash,
            "embedding_model": self.model_id,
            "chunking": self.signature,
            "format": item.doc.format,
        }
        if item.doc.title:
            meta["title"] = item.doc.title[:TEXT_FIELD_LIMIT]
        if chunk.section:
            meta["section"] = chunk.section[:TEXT_FIELD_LIMIT]
        return meta
