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
================== ==================================================================
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from .._embedder import Embedder
from .._exit import Status
from .._protocol import VectorStore
from .._report import Report
from .canaries import CanaryResult, CanarySet, check_canaries
from .documents import sha256_hex
from .embedders import same_model
from .indexer import ProgressFn

__all__ = ["CHECKS", "DoctorReport", "Finding", "diagnose"]

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
)


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
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> Status:
        """``healthy`` (no findings) or ``findings``."""
        return Status.FINDINGS if self.findings else Status.HEALTHY

    def sections(self) -> dict[str, Any]:
        out = asdict(self)
        out["findings"] = [f.to_dict() for f in self.findings]
        out["canaries"] = [c.to_dict() for c in self.canaries]
        out["ok"] = self.ok
        return out


def _finding(check: str, message: str, keys: list[str], shown: int) -> Finding:
    return Finding(check, message, tuple(sorted(keys)[:shown]), len(keys))


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
    """
    spec = store.spec
    expected_model = spec.embedding_model
    report = DoctorReport(store.url.masked, expected_model, spec.dimension)
    wanted = [c for c in CHECKS if c not in skip]
    root = Path(source_root) if source_root is not None else None

    wrong_dim: list[str] = []
    non_finite: list[str] = []
    norm_keys: list[str] = []
    norms: list[float] = []
    by_model: dict[str | None, list[str]] = defaultdict(list)
    first_by_text: dict[str, str] = {}
    dupes: dict[str, list[str]] = defaultdict(list)
    docs: dict[str, list[tuple[str, Any, Any, Any]]] = defaultdict(list)
    picked: list[tuple[int, str, str, npt.NDArray[np.float32], str | None]] = []

    seen = 0
    for page in store.scan(include=["vector", "metadata", "text"]):
        for rec in page:
            seen += 1
            vec = np.asarray(rec.vector, dtype=np.float64) if rec.vector is not None else np.zeros(0)
            if vec.shape != (spec.dimension,):
                wrong_dim.append(rec.key)
                continue
            if not np.isfinite(vec).all():
                non_finite.append(rec.key)
                continue
            norm_keys.append(rec.key)
            norms.append(float(np.linalg.norm(vec)))
            meta = rec.metadata or {}
            model = meta.get("embedding_model")
            by_model[model if isinstance(model, str) else None].append(rec.key)
            if rec.text:
                digest = sha256_hex(" ".join(rec.text.split()))
                first = first_by_text.setdefault(digest, rec.key)
                if first != rec.key:
                    dupes[first].append(rec.key)
            source = meta.get("source")
            if isinstance(source, str):
                docs[source].append(
                    (rec.key, meta.get("chunk_index"), meta.get("total_chunks"), meta.get("doc_hash"))
                )
            if embedder is not None and rec.text and "embedding-drift" in wanted:
                rank = -int.from_bytes(hashlib.sha1(rec.key.encode()).digest()[:8], "big")
                item = (
                    rank,
                    rec.key,
                    rec.text,
                    vec.astype(np.float32),
                    model if isinstance(model, str) else None,
                )
                if sample <= 0 or len(picked) < sample:
                    heapq.heappush(picked, item)
                elif item[0] > picked[0][0]:
                    heapq.heapreplace(picked, item)
        if progress:
            progress("scan", seen, None)
    report.records = seen

    def run(check: str) -> bool:
        if check in wanted:
            report.checks_run.append(check)
            return True
        return False

    if run("dimension") and wrong_dim:
        report.findings.append(
            _finding(
                "dimension",
                f"{len(wrong_dim)} vectors are not {spec.dimension}-dimensional",
                wrong_dim,
                max_keys,
            )
        )
    if run("non-finite") and non_finite:
        report.findings.append(
            _finding("non-finite", f"{len(non_finite)} vectors hold NaN or inf", non_finite, max_keys)
        )
    if run("norm") and norms:
        arr = np.asarray(norms)
        median = float(np.median(arr))
        normalised = abs(median - 1.0) <= norm_tolerance
        if normalised:
            bad_mask = np.abs(arr - 1.0) > norm_tolerance
            why = f"norm differs from 1 by more than {norm_tolerance} in a normalised collection"
        else:
            bad_mask = (arr == 0) | (arr > 3 * median) | (arr < median / 3)
            why = f"norm is zero or more than 3x away from the median {median:.4g}"
        bad = [norm_keys[i] for i in np.flatnonzero(bad_mask)]
        report.stats["norm"] = {
            "median": round(median, 6),
            "min": round(float(arr.min()), 6),
            "max": round(float(arr.max()), 6),
            "normalised": normalised,
        }
        if bad:
            report.findings.append(_finding("norm", f"{len(bad)} vectors: {why}", bad, max_keys))
    if run("stale-model"):
        counts = {m or "(none)": len(k) for m, k in by_model.items()}
        report.stats["embedding_models"] = counts
        reference = expected_model or (embedder.model_id if embedder else None)
        if reference is None:
            named = Counter({m: len(k) for m, k in by_model.items() if m})
            reference = named.most_common(1)[0][0] if named else None
        others_keys = [keys for model, keys in by_model.items() if model and not same_model(model, reference)]
        stale = [key for keys in others_keys for key in keys]
        if stale and reference:
            others = sorted({m for m in by_model if m and not same_model(m, reference)})
            report.findings.append(
                _finding(
                    "stale-model",
                    f"{len(stale)} chunks were embedded with {', '.join(others)}, not the collection's "
                    f"{reference}; re-ingest them (their vectors are in another space)",
                    stale,
                    max_keys,
                )
            )
    if run("duplicate-content") and dupes:
        groups = len(dupes)
        keys = [k for first, rest in dupes.items() for k in (first, *rest)]
        report.findings.append(
            _finding(
                "duplicate-content", f"{groups} texts are stored under more than one key", keys, max_keys
            )
        )
    if root is None:
        report.checks_skipped["orphan"] = "no source root given (--source-root)"
    elif run("orphan"):
        gone = sorted(s for s in docs if not (root / s).is_file())
        keys = [k for s in gone for k, *_ in docs[s]]
        if gone:
            report.findings.append(
                _finding(
                    "orphan",
                    f"{len(keys)} chunks of {len(gone)} documents whose file is gone under {root} "
                    f"(e.g. {gone[0]}); re-run `vectorport ingest` to remove them",
                    keys,
                    max_keys,
                )
            )
    if run("torn-document"):
        torn = [s for s, chunks in docs.items() if _torn(chunks)]
        if torn:
            keys = [k for s in torn for k, *_ in docs[s]]
            report.findings.append(
                _finding(
                    "torn-document",
                    f"{len(torn)} documents have inconsistent chunks (e.g. {sorted(torn)[0]}); re-run "
                    "`vectorport ingest` to rewrite them",
                    keys,
                    max_keys,
                )
            )
    if embedder is None:
        report.checks_skipped["embedding-drift"] = "no embedder"
    elif run("embedding-drift") and picked:
        comparable = [p for p in picked if p[4] is None or same_model(p[4], embedder.model_id)]
        if comparable:
            fresh = embedder.embed_documents([p[2] for p in comparable]).astype(np.float64)
            stored = np.stack([p[3] for p in comparable]).astype(np.float64)
            sims = np.einsum("ij,ij->i", fresh, stored) / (
                np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1) + 1e-12
            )
            report.stats["embedding_drift"] = {
                "sampled": len(comparable),
                "min_similarity": round(float(sims.min()), 6),
                "mean_similarity": round(float(sims.mean()), 6),
            }
            drifted = [comparable[i][1] for i in np.flatnonzero(sims < drift_threshold)]
            if drifted:
                report.findings.append(
                    _finding(
                        "embedding-drift",
                        f"{len(drifted)} of {len(comparable)} sampled chunks re-embed with cosine similarity "
                        f"< {drift_threshold} to their stored vector (min {float(sims.min()):.4f}): "
                        "the stored "
                        f"vectors do not come from {embedder.model_id} as it is now",
                        drifted,
                        max_keys,
                    )
                )
    if canaries is None:
        report.checks_skipped["canary-drift"] = "no canary file (--canaries)"
    elif embedder is None:
        report.checks_skipped["canary-drift"] = "no embedder"
    elif run("canary-drift"):
        report.canaries = check_canaries(store, embedder, canaries)
        drifted_canaries = [c for c in report.canaries if c.drifted]
        if drifted_canaries:
            worst = drifted_canaries[0]
            report.findings.append(
                Finding(
                    "canary-drift",
                    f"{len(drifted_canaries)} of {len(report.canaries)} canary queries drifted "
                    f"(e.g. {worst.text[:60]!r}: {'; '.join(worst.reasons)})",
                    (),
                    len(drifted_canaries),
                )
            )
    return report


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
