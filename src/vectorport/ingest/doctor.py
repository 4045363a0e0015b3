"""Health checks of a collection: ``vectorport doctor URL``.

One streaming scan (vectors, metadata, text) feeds every check; memory stays proportional to
the number of records' keys, never to their vectors.

================== ==================================================================
check              finds
================== ==================================================================
dimension          vectors whose length is not the collection's dimension
non-finite         NaN or infinite components
norm               zero vectors; in a normalised collection (median norm ≈ 1) vectors
                   whose norm is off by more than ``norm_tolerance``; otherwise norms
                   more than 3 times away from the median
stale-model        chunks whose ``embedding_model`` differs from the collection's
duplicate-content  the same text under different keys
orphan             chunks whose ``source`` file is gone (needs ``source_root``)
torn-document      a document's chunks disagree: mixed ``doc_hash``/``total_chunks``,
                   missing or out-of-range ``chunk_index`` (an interrupted writer)
embedding-drift    re-embedding a sample of stored chunk texts with the current embedder
                   gives vectors far from the stored ones (needs an embedder)
canary-drift       recorded canary queries retrieve differently now (see ``canaries``)
canary-model       a store's vectors do not come from the model it records: known records'
                   texts embedded by it disagree with their stored vectors; the model they
                   come from is named when another known one agrees (an alias: each member,
                   see :func:`~.canaries.model_canaries`)
================== ==================================================================
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._embedder import Embedder
from .._exit import Status
from .._features import change_capture_of
from .._models import Record
from .._protocol import VectorStore
from .._report import Report
from ..exceptions import Action, Advice, Advised, Call, ConfigurationError, Step
from .canaries import CanaryResult, CanarySet, HasMembers, ModelCanary, check_canaries, model_canaries
from .compat import REEMBED, ModelMismatchError
from .documents import sha256_hex
from .embedders import resolve_embedder, same_model
from .indexer import ProgressFn

__all__ = ["CHECKS", "NO_CANARIES", "NO_SOURCE_ROOT", "DoctorReport", "Finding", "diagnose", "source_root_of"]

CHECKS = (
    "dimension",
    "non-finite",
    "norm",
    "stale-model",
    "duplicate-content",
    "orphan",
    "torn-document",
    "embedding-drift",
    "canary-drift",
    "canary-model",
    "capture",
)
HELD_BACK = {"retained_wal_bytes": 128 * 2**20, "outbox_rows": 100_000}
"""What a change capture may hold back on the source's server before ``capture`` reports it (a
follower stopped, or never restarted, keeps WAL or outbox rows until it confirms them)."""

NO_SOURCE_ROOT = "no source root given (source_root)"
"""Why ``orphan`` was skipped: :func:`diagnose` had no ``source_root``."""
NO_CANARIES = "no canaries given (canaries)"
"""Why ``canary-drift`` was skipped: :func:`diagnose` had no ``canaries``."""


@dataclass(frozen=True)
class Finding:
    """One problem: which check, what, and the keys concerned (capped in ``keys``)."""

    check: str
    message: str
    keys: tuple[str, ...] = ()
    count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "message": self.message, "count": self.count, "keys": list(self.keys)}


@dataclass
class DoctorReport(Report):
    """All findings of a run; ``ok`` when there are none (the CLI then exits 0)."""

    SCHEMA: ClassVar[str] = "vectorport.doctor/1"

    store: str
    collection_model: str | None
    dimension: int
    records: int = 0
    checks_run: list[str] = field(default_factory=list)
    checks_skipped: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    canaries: list[CanaryResult] = field(default_factory=list)
    models: list[ModelCanary] = field(default_factory=list)
    """``canary-model``: which model each store's vectors come from (an alias: each member's)."""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> Status:
        """``healthy`` (no findings) or ``findings``."""
        return Status.FINDINGS if self.findings else Status.HEALTHY

    def sections(self) -> dict[str, Any]:
        out = asdict(self)
        out["findings"] = [f.to_dict() for f in self.findings]
        out["canaries"] = [c.to_dict() for c in self.canaries]
        out["models"] = [m.to_dict() for m in self.models]
        out["ok"] = self.ok
        return out


def _finding(check: str, message: str, keys: list[str], shown: int) -> Finding:
    return Finding(check, message, tuple(sorted(keys)[:shown]), len(keys))


INGEST = Call("ingest", ("PATH", "URL"))
"""The call that ingests (again) the documents of a collection."""


def source_root_of(source_root: str | os.PathLike[str] | None) -> Path | None:
    """``source_root`` as a directory that exists (the ``orphan`` check reads it), else refused."""
    root = Path(source_root) if source_root is not None else None
    if root is not None and not root.is_dir():
        raise ConfigurationError(
            Advised.of(
                "the source root {} is not a directory; give the folder the documents were ingested "
                "from (the PATH of `{}`)",
                root,
                INGEST,
            )
        )
    return root


def _check_embedder(store: VectorStore, embedder: Embedder | None) -> None:
    """Refuse an embedder of another dimension than the collection's, before any read."""
    spec = store.spec
    if embedder is not None and embedder.dimension != spec.dimension:
        raise ModelMismatchError(
            Advised.of(
                "collection {!r} at {} holds {}-dimensional vectors, but {!r} makes {}-dimensional "
                "ones; pass the collection's embedder ({}) or none ({})",
                spec.name,
                store.url.masked,
                spec.dimension,
                embedder.model_id,
                embedder.dimension,
                Advice("embedder"),
                Advice("embedder", None),
            )
        )


def _embedder_checks(
    d: _Doctor, store: VectorStore, embedder: Embedder | None, canaries: CanarySet | None, threshold: float
) -> None:
    """``embedding-drift`` and ``canary-drift``, which need an embedder (and canaries)."""
    report = d.report
    if embedder is None:
        report.checks_skipped["embedding-drift"] = "no embedder"
    else:
        d.run("embedding-drift", lambda: d.embedding_drift(embedder, threshold))
    if canaries is None:
        report.checks_skipped["canary-drift"] = NO_CANARIES
    elif embedder is None:
        report.checks_skipped["canary-drift"] = "no embedder"
    else:
        d.run("canary-drift", lambda: d.canary_drift(store, embedder, canaries))


def diagnose(
    store: VectorStore,
    *,
    embedder: Embedder | None = None,
    source_root: str | os.PathLike[str] | None = None,
    canaries: CanarySet | None = None,
    sample: int = 32,
    drift_threshold: float = 0.99,
    norm_tolerance: float = 0.01,
    skip: tuple[str, ...] = (),
    max_keys: int = 20,
    progress: ProgressFn | None = None,
    models: Sequence[str] | None = (),
) -> DoctorReport:
    """Run the health checks (see the module docstring) and return every finding.

    Parameters
    ----------
    embedder
        Enables ``embedding-drift`` (re-embeds ``sample`` stored chunks; 0 = all) and
        ``canary-drift``.
    source_root
        Folder the ``source`` metadata is relative to; enables ``orphan``.
    canaries
        Canaries recorded earlier with :func:`~vectorport.ingest.record_canaries`.
    models
        Models ``canary-model`` tries, besides those recorded, when a store's vectors do not
        come from its recorded model (``None``: the check is skipped, nothing re-embedded).
    """
    spec = store.spec
    report = DoctorReport(store.url.masked, spec.embedding_model, spec.dimension)
    wanted = [c for c in CHECKS if c not in skip]
    root = source_root_of(source_root)
    _check_embedder(store, embedder)
    scan = _Scan(spec.dimension, sample if embedder is not None and "embedding-drift" in wanted else None)
    scan.read(store, progress)
    report.records = scan.seen
    d = _Doctor(report, scan, wanted, max_keys)
    d.run("dimension", d.dimension)
    d.run("non-finite", d.non_finite)
    d.run("norm", lambda: d.norm(norm_tolerance))
    d.run("stale-model", lambda: d.stale_model(embedder))
    d.run("duplicate-content", d.duplicate_content)
    if root is None:
        report.checks_skipped["orphan"] = NO_SOURCE_ROOT
    else:
        d.run("orphan", lambda: d.orphan(root))
    d.run("torn-document", d.torn_document)
    _embedder_checks(d, store, embedder, canaries, drift_threshold)
    _canary_model(d, store, embedder, models)
    d.run("capture", lambda: _capture(store, report))
    return report


def _canary_model(
    d: _Doctor, store: VectorStore, embedder: Embedder | None, models: Sequence[str] | None
) -> None:
    """Run ``canary-model`` over the store, or each member of an alias, that records a model."""
    members = store.member_stores() if isinstance(store, HasMembers) else [(store.url.masked, store, None)]
    targets = [(label, s, model or s.spec.embedding_model) for label, s, model in members]
    if models is None:
        d.report.checks_skipped["canary-model"] = "no embedder"
    elif not any(model for _, _, model in targets):
        d.report.checks_skipped["canary-model"] = "no embedding model recorded"
    else:
        given = [embedder.model_id] if embedder is not None else []
        known = [m for _, _, m in targets if m] + given + list(models) + [m for m in d.scan.by_model if m]
        d.run("canary-model", lambda: d.canary_model(targets, known, _loader(embedder)))


def _loader(embedder: Embedder | None) -> Callable[[str], Embedder]:
    """Embedders by model id, each loaded once (``embedder`` for its own id)."""
    loaded: dict[str, Embedder] = {} if embedder is None else {embedder.model_id: embedder}

    def load(model: str) -> Embedder:
        if model not in loaded:
            loaded[model] = resolve_embedder(model)
        return loaded[model]

    return load


def _capture(store: VectorStore, report: DoctorReport) -> Finding | None:
    """The store's change capture (its health in ``stats``): a finding when it holds back more
    than :data:`HELD_BACK` on the server, or its slot lost the WAL it needed."""
    captured = change_capture_of(store)
    feed = captured.change_feed() if captured is not None else None
    if feed is None:
        return None
    try:
        health = feed.health()
    finally:
        feed.close()
    report.stats["capture"] = health
    over = [k for k, most in HELD_BACK.items() if int(str(health.get(k) or 0)) > most]
    if not over and health.get("wal_status") not in ("unreserved", "lost"):
        return None
    held = ", ".join(f"{k.replace('_', ' ')} {health[k]}" for k in over) or f"WAL {health.get('wal_status')}"
    consumer, last = health.get("consumer") or "no target yet", health.get("confirmed_at") or "never"
    return Finding(
        "capture",
        Advised.of(
            "the change capture {} holds back {} on the server (it feeds the sync into {}, last "
            "confirmed {}): run that sync (it confirms what it applies), or remove the capture ({})",
            health.get("name"),
            held,
            consumer,
            last,
            Step(Action.REMOVE_CAPTURE),
        ),
    )


_Picked = tuple[int, str, str, npt.NDArray[np.float32], str | None]
"""A chunk drawn for the drift check: its rank (a hash of its key), key, text, vector, model."""


class _Scan:
    """What one streaming scan gathers for every check: keys per problem and per model, norms,
    texts' first keys, chunks per source document, and a sample of chunks to re-embed
    (``sample``: how many, 0 all, ``None`` none)."""

    def __init__(self, dimension: int, sample: int | None) -> None:
        self.dimension, self.sample = dimension, sample
        self.seen = 0
        self.wrong_dim: list[str] = []
        self.non_finite: list[str] = []
        self.norm_keys: list[str] = []
        self.norms: list[float] = []
        self.by_model: dict[str | None, list[str]] = defaultdict(list)
        self.first_by_text: dict[str, str] = {}
        self.dupes: dict[str, list[str]] = defaultdict(list)
        self.docs: dict[str, list[tuple[str, Any, Any, Any]]] = defaultdict(list)
        self.picked: list[_Picked] = []

    def read(self, store: VectorStore, progress: ProgressFn | None) -> None:
        for page in store.scan(include=["vector", "metadata", "text"]):
            for rec in page:
                self.seen += 1
                self.add(rec)
            if progress:
                progress("scan", self.seen, None)

    def add(self, rec: Record) -> None:
        vec = np.asarray(rec.vector, dtype=np.float64) if rec.vector is not None else np.zeros(0)
        if vec.shape != (self.dimension,):
            self.wrong_dim.append(rec.key)
            return
        if not np.isfinite(vec).all():
            self.non_finite.append(rec.key)
            return
        self.norm_keys.append(rec.key)
        self.norms.append(float(np.linalg.norm(vec)))
        meta = rec.metadata or {}
        model = meta.get("embedding_model")
        model = model if isinstance(model, str) else None
        self.by_model[model].append(rec.key)
        if rec.text:
            digest = sha256_hex(" ".join(rec.text.split()))
            first = self.first_by_text.setdefault(digest, rec.key)
            if first != rec.key:
                self.dupes[first].append(rec.key)
        source = meta.get("source")
        if isinstance(source, str):
            self.docs[source].append(
                (rec.key, meta.get("chunk_index"), meta.get("total_chunks"), meta.get("doc_hash"))
            )
        if self.sample is not None and rec.text:
            self._pick(rec.key, rec.text, vec.astype(np.float32), model)

    def _pick(self, key: str, text: str, vec: npt.NDArray[np.float32], model: str | None) -> None:
        """Keep the ``sample`` chunks of the highest rank: the same ones on every run."""
        item = (-int.from_bytes(hashlib.sha1(key.encode()).digest()[:8], "big"), key, text, vec, model)
        if self.sample is not None and (self.sample <= 0 or len(self.picked) < self.sample):
            heapq.heappush(self.picked, item)
        elif item[0] > self.picked[0][0]:
            heapq.heapreplace(self.picked, item)


class _Doctor:
    """The checks over one scan, each adding its finding (if any) to the report."""

    def __init__(self, report: DoctorReport, scan: _Scan, wanted: list[str], max_keys: int) -> None:
        self.report, self.scan, self.wanted, self.max_keys = report, scan, wanted, max_keys

    def run(self, check: str, fn: Callable[[], Finding | None]) -> None:
        if check not in self.wanted:
            return
        self.report.checks_run.append(check)
        found = fn()
        if found is not None:
            self.report.findings.append(found)

    def finding(self, check: str, message: str, keys: list[str]) -> Finding:
        return _finding(check, message, keys, self.max_keys)

    def dimension(self) -> Finding | None:
        bad = self.scan.wrong_dim
        if not bad:
            return None
        return self.finding("dimension", f"{len(bad)} vectors are not {self.scan.dimension}-dimensional", bad)

    def non_finite(self) -> Finding | None:
        bad = self.scan.non_finite
        return self.finding("non-finite", f"{len(bad)} vectors hold NaN or inf", bad) if bad else None

    def norm(self, tolerance: float) -> Finding | None:
        if not self.scan.norms:
            return None
        arr = np.asarray(self.scan.norms)
        median = float(np.median(arr))
        normalised = abs(median - 1.0) <= tolerance
        if normalised:
            bad_mask = np.abs(arr - 1.0) > tolerance
            why = f"norm differs from 1 by more than {tolerance} in a normalised collection"
        else:
            bad_mask = (arr == 0) | (arr > 3 * median) | (arr < median / 3)
            why = f"norm is zero or more than 3x away from the median {median:.4g}"
        bad = [self.scan.norm_keys[i] for i in np.flatnonzero(bad_mask)]
        self.report.stats["norm"] = {
            "median": round(median, 6),
            "min": round(float(arr.min()), 6),
            "max": round(float(arr.max()), 6),
            "normalised": normalised,
        }
        return self.finding("norm", f"{len(bad)} vectors: {why}", bad) if bad else None

    def stale_model(self, embedder: Embedder | None) -> Finding | None:
        by_model = self.scan.by_model
        self.report.stats["embedding_models"] = {m or "(none)": len(k) for m, k in by_model.items()}
        reference = self.report.collection_model or (embedder.model_id if embedder else None)
        if reference is None:
            named = Counter({m: len(k) for m, k in by_model.items() if m})
            reference = named.most_common(1)[0][0] if named else None
        others = sorted({m for m in by_model if m and not same_model(m, reference)})
        stale = [key for model in by_model if model in others for key in by_model[model]]
        if not (stale and reference):
            return None
        return self.finding(
            "stale-model",
            f"{len(stale)} chunks were embedded with {', '.join(others)}, not the collection's "
            f"{reference}; re-ingest them (their vectors are in another space)",
            stale,
        )

    def duplicate_content(self) -> Finding | None:
        dupes = self.scan.dupes
        if not dupes:
            return None
        keys = [k for first, rest in dupes.items() for k in (first, *rest)]
        return self.finding(
            "duplicate-content", f"{len(dupes)} texts are stored under more than one key", keys
        )

    def orphan(self, root: Path) -> Finding | None:
        docs = self.scan.docs
        gone = sorted(s for s in docs if not (root / s).is_file())
        if not gone:
            return None
        keys = [k for s in gone for k, *_ in docs[s]]
        return self.finding(
            "orphan",
            Advised.of(
                "{} chunks of {} documents whose file is gone under {} (e.g. {}); run `{}` again to "
                "remove them",
                len(keys),
                len(gone),
                root,
                gone[0],
                INGEST,
            ),
            keys,
        )

    def torn_document(self) -> Finding | None:
        docs = self.scan.docs
        torn = [s for s, chunks in docs.items() if _torn(chunks)]
        if not torn:
            return None
        return self.finding(
            "torn-document",
            Advised.of(
                "{} documents have inconsistent chunks (e.g. {}); run `{}` again to rewrite them",
                len(torn),
                sorted(torn)[0],
                INGEST,
            ),
            [k for s in torn for k, *_ in docs[s]],
        )

    def embedding_drift(self, embedder: Embedder, threshold: float) -> Finding | None:
        picked = [p for p in self.scan.picked if p[4] is None or same_model(p[4], embedder.model_id)]
        if not picked:
            return None
        fresh = embedder.embed_documents([p[2] for p in picked]).astype(np.float64)
        stored = np.stack([p[3] for p in picked]).astype(np.float64)
        sims = np.einsum("ij,ij->i", fresh, stored) / (
            np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1) + 1e-12
        )
        self.report.stats["embedding_drift"] = {
            "sampled": len(picked),
            "min_similarity": round(float(sims.min()), 6),
            "mean_similarity": round(float(sims.mean()), 6),
        }
        drifted = [picked[i][1] for i in np.flatnonzero(sims < threshold)]
        if not drifted:
            return None
        return self.finding(
            "embedding-drift",
            f"{len(drifted)} of {len(picked)} sampled chunks re-embed with cosine similarity "
            f"< {threshold} to their stored vector (min {float(sims.min()):.4f}): the stored "
            f"vectors do not come from {embedder.model_id} as it is now",
            drifted,
        )

    def canary_model(
        self,
        targets: list[tuple[str, VectorStore, str | None]],
        known: list[str],
        load: Callable[[str], Embedder],
    ) -> Finding | None:
        for label, store, model in targets:
            if model:
                others = [m for m in known if not same_model(m, model)]
                self.report.models.append(model_canaries(store, model, others, label=label, load=load))
        wrong = [m for m in self.report.models if not m.agrees]
        if not wrong:
            return None
        said = "; ".join(
            f"{m.store} records {m.recorded} but its vectors come from "
            + (
                m.comes_from
                or "none of " + ", ".join(f"{k} (similarity {v:.3f})" for k, v in m.similarity.items())
            )
            for m in wrong
        )
        return Finding(
            "canary-model",
            Advised.of(
                "{}: its queries are embedded by the recorded model, in another space than its "
                "vectors; re-embed it (`{}`) into a new collection",
                said,
                REEMBED,
            ),
            tuple(m.store for m in wrong),
            len(wrong),
        )

    def canary_drift(self, store: VectorStore, embedder: Embedder, canaries: CanarySet) -> Finding | None:
        self.report.canaries = check_canaries(store, embedder, canaries)
        drifted = [c for c in self.report.canaries if c.drifted]
        if not drifted:
            return None
        worst = drifted[0]
        return Finding(
            "canary-drift",
            f"{len(drifted)} of {len(self.report.canaries)} canary queries drifted "
            f"(e.g. {worst.text[:60]!r}: {'; '.join(worst.reasons)})",
            (),
            len(drifted),
        )


def _torn(chunks: list[tuple[str, Any, Any, Any]]) -> bool:
    totals = {c[2] for c in chunks}
    hashes = {c[3] for c in chunks}
    if len(totals) != 1 or len(hashes) != 1:
        return True
    total = totals.pop()
    if not isinstance(total, int) or isinstance(total, bool):
        return False  # not written by the ingester's scheme; nothing to compare against
    indexes = sorted(c[1] for c in chunks if isinstance(c[1], int))
    return indexes != list(range(total))
