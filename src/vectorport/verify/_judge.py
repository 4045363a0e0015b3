"""The rules of equality every verification applies to one record and its copy: vectors at
float32 tolerance (relative to the largest component), metadata as JSON (with the backends'
declared float ulps), text exactly; and a page of source records judged against the target's
records of the same keys (:func:`compare_page`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .._json import json_equal
from .._models import JSON, Record
from .._protocol import VectorStore
from .._report import Capped
from ..engine._transform import Transformer

__all__ = [
    "DIFFERENCE_KINDS",
    "VECTOR_TOLERANCE",
    "PageResult",
    "compare_page",
    "fold_page",
    "key_hashes",
    "same_content",
    "start_differences",
    "vector_difference",
]

VECTOR_TOLERANCE = 1e-6
"""Largest allowed ``max|a - b|`` relative to ``max(1, max|a|)``: a few float32 ulps."""
_SHOW = 300


def _key_hash(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little")


def key_hashes(keys: Sequence[str]) -> npt.NDArray[np.uint64]:
    return np.fromiter((_key_hash(k) for k in keys), dtype=np.uint64, count=len(keys))


def _short(value: JSON) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOW else text[:_SHOW] + f"… ({len(text)} chars)"


def _metadata_paths(expected: dict[str, JSON], actual: dict[str, JSON]) -> list[str]:
    out = [f"metadata.{k}" for k in expected if k not in actual]
    out += [f"metadata.{k}" for k in actual if k not in expected]
    out += [f"metadata.{k}" for k in expected if k in actual and not json_equal(expected[k], actual[k])]
    return out


@dataclass
class PageResult:
    hashes: npt.NDArray[np.uint64]
    compared: int = 0
    missing: list[str] = field(default_factory=list)
    vectors: list[dict[str, JSON]] = field(default_factory=list)
    metadata: list[dict[str, JSON]] = field(default_factory=list)
    text: list[dict[str, JSON]] = field(default_factory=list)


def vector_difference(expected: object, actual: object, tolerance: float) -> dict[str, JSON] | None:
    """How ``actual`` differs from ``expected`` beyond ``tolerance`` (relative to the largest
    component, at least 1), or ``None`` when it does not."""
    a = np.asarray(expected, dtype=np.float32)
    b = None if actual is None else np.asarray(actual, dtype=np.float32)
    if b is None or a.shape != b.shape:
        return {"problem": "missing or wrong shape"}
    if np.array_equal(a, b, equal_nan=True):
        return None
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf: judged below
        diff = float(np.max(np.abs(a - b))) if a.size else 0.0
        scale = max(1.0, float(np.max(np.abs(a))) if a.size else 1.0)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return {"problem": "NaN or infinite components that the other side does not hold"}
    if diff > tolerance * scale:
        return {"max_abs_diff": diff}
    return None


def same_content(
    expected: Record, actual: Record, *, tolerance: float = VECTOR_TOLERANCE, float_ulps: int = 0
) -> bool:
    """Whether the target's ``actual`` record holds ``expected`` (already transformed), by the
    rules of verification: vectors at ``tolerance``, metadata as JSON, text exactly."""
    return (
        vector_difference(expected.vector, actual.vector, tolerance) is None
        and json_equal(expected.metadata or {}, actual.metadata or {}, float_ulps)
        and expected.text == actual.text
    )


def compare_page(
    page: Sequence[Record],
    target: VectorStore,
    transformer: Transformer | None,
    compare_vectors: bool,
    tolerance: float,
    float_ulps: int = 0,
) -> PageResult:
    keys = [r.key for r in page]
    result = PageResult(key_hashes(keys))
    found = {r.key: r for r in target.get(keys)}
    for rec in page:
        got = found.get(rec.key)
        if got is None:
            result.missing.append(rec.key)
            continue
        result.compared += 1
        if transformer is not None:
            out = transformer.apply(rec.metadata, rec.text)
            meta, text = out.metadata, out.text
        else:
            meta, text = rec.metadata, rec.text
        if compare_vectors:
            problem = vector_difference(rec.vector, got.vector, tolerance)
            if problem is not None:
                result.vectors.append({"key": rec.key, **problem})
        actual = got.metadata or {}
        if not json_equal(meta, actual, float_ulps):
            result.metadata.append(
                {
                    "key": rec.key,
                    "paths": _metadata_paths(meta, actual),
                    "expected": _short(meta),
                    "actual": _short(actual),
                }
            )
        if text != got.text:
            result.text.append(
                {
                    "key": rec.key,
                    "expected": None if text is None else _short(text),
                    "actual": None if got.text is None else _short(got.text),
                }
            )
    return result


DIFFERENCE_KINDS = ("missing", "extra", "vectors", "metadata", "text")
"""The kinds of difference a verification lists, each capped (exact totals)."""


def start_differences(holder: Any, cap: int) -> None:
    """Give ``holder`` (a report, or one task's result) an empty list of each kind of
    difference, capped at ``cap``."""
    for kind in DIFFERENCE_KINDS:
        setattr(holder, kind, Capped(cap))


def fold_page(holder: Any, res: PageResult) -> None:
    """Add one judged page (:func:`compare_page`) to ``holder`` (a report, or one task's
    result): the records compared, the missing keys and each kind of changed record."""
    holder.compared += res.compared
    for key in res.missing:
        holder.missing.add(key)
    for kind in ("vectors", "metadata", "text"):
        group = getattr(holder, kind)
        for item in getattr(res, kind):
            group.add(item)
