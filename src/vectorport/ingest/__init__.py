"""Ingestion and health: chunk → hash → embed → upsert, incrementally, and checks that notice
when retrieval silently went wrong.

Import cost is small: embedders load torch / voyageai on first use only.

>>> import vectorport, tempfile, pathlib
>>> from vectorport.ingest import ingest
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = (root / "notes.md").write_text("# Notes\\n\\nVectors are lists of numbers.")
>>> report = ingest(root, "memory://doctest-ingest", embedder="hash:32")
>>> report.added, report.embedding_calls
(1, 1)
>>> ingest(root, "memory://doctest-ingest", embedder="hash:32").skipped
1
>>> vectorport.connect("memory://doctest-ingest").drop()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from .._models import Metric
from .._protocol import VectorStore
from .._registry import connect
from ..exceptions import NotFoundError, VectorportError
from .canaries import CanaryResult, CanarySet, check_canaries, default_canary_texts, record_canaries
from .chunker import Chunk, Chunker, ChunkingConfig
from .compat import ModelMismatchError, check_embedder, embedder_for, recorded_model
from .corpus import Corpus, SourceFile
from .doctor import DoctorReport, Finding, diagnose
from .documents import Block, BlockKind, Document
from .embedders import (
    DEFAULT_EMBEDDER,
    BaseEmbedder,
    Embedder,
    EmbeddingError,
    HashEmbedder,
    SentenceTransformerEmbedder,
    VoyageEmbedder,
    resolve_embedder,
    same_model,
)
from .indexer import DocumentOutcome, Indexer, IngestReport, ProgressFn, chunk_key
from .loaders import load_bytes, load_path

__all__ = [
    "DEFAULT_EMBEDDER",
    "BaseEmbedder",
    "Block",
    "BlockKind",
    "CanaryResult",
    "CanarySet",
    "Chunk",
    "Chunker",
    "ChunkingConfig",
    "Corpus",
    "DoctorReport",
    "Document",
    "DocumentOutcome",
    "Embedder",
    "EmbeddingError",
    "Finding",
    "HashEmbedder",
    "Indexer",
    "IngestReport",
    "ModelMismatchError",
    "ProgressFn",
    "SentenceTransformerEmbedder",
    "SourceFile",
    "VoyageEmbedder",
    "check_canaries",
    "check_embedder",
    "chunk_key",
    "connect_for",
    "default_canary_texts",
    "diagnose",
    "embedder_for",
    "ingest",
    "load_bytes",
    "load_path",
    "record_canaries",
    "recorded_model",
    "resolve_embedder",
    "same_model",
]


def connect_for(
    url: str,
    embedder: Embedder,
    *,
    metric: str | Metric | None = None,
    before_create: Callable[[], None] | None = None,
    **options: Any,
) -> Any:
    """Open (or create) the collection at ``url`` for ``embedder``: its dimension and model id
    are recorded on creation and checked on open. ``metric`` is the new collection's (default
    cosine); an existing collection keeps its own unless ``metric`` names another.
    ``before_create`` runs when the collection is missing, before it is made: it may refuse."""
    model = embedder.model_id
    recorded: str | None = None
    try:
        with connect(url, **options) as existing:
            recorded = existing.spec.embedding_model or ""
    except NotFoundError:
        # about to create the collection: nothing to ingest, or an embedder that cannot embed
        # (no key, endpoint down), must fail first, not leave an empty collection behind
        if before_create is not None:
            before_create()
        check = getattr(embedder, "check_ready", None)
        if check is not None:
            check()
    except VectorportError:
        pass  # connect below says what is wrong with the URL
    if recorded and recorded != model and same_model(recorded, model):
        # A collection recording the same model under another id (Chroma's "chroma:default", a
        # model folder by its name) is opened with its own id, so the spec check on open accepts it.
        model = recorded
    return connect(url, dimension=embedder.dimension, metric=metric, embedding_model=model, **options)


def ingest(
    path: str | os.PathLike[str],
    store: str | VectorStore,
    *,
    embedder: str | Embedder | None = None,
    root: str | os.PathLike[str] | None = None,
    extra_paths: Iterable[str | os.PathLike[str]] = (),
    chunking: ChunkingConfig | None = None,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    prune: bool = True,
    metric: str | Metric | None = None,
    progress: ProgressFn | None = None,
) -> IngestReport:
    """Ingest the files under ``path`` into a store (or a URL, opened and closed here).

    See :class:`Indexer` for what is skipped, replaced and removed. ``root`` names sources
    relative to another folder (default: ``path`` itself, or its folder for a file). ``metric``
    applies when the collection is created (default cosine). A path holding no file to read is
    refused before a missing collection is created; into an existing one it removes the
    documents its files had put there (``prune``).
    """
    emb = resolve_embedder(embedder)
    paths = [path, *extra_paths]
    corpus = Corpus(root, paths, include=include, exclude=exclude)
    if isinstance(store, str):
        with connect_for(store, emb, metric=metric, before_create=corpus.require_files) as opened:
            return Indexer(opened, emb, chunking=chunking).run(corpus, prune=prune, progress=progress)
    return Indexer(store, emb, chunking=chunking).run(corpus, prune=prune, progress=progress)
