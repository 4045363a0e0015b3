"""The records each store holds, against the truth's: counts, and the truth keys a store lacks.

Ranking figures cannot see a lost record once the store answers with the next-nearest one, so
every comparison also lists each store's keys (one key-only scan) and the ``max-missing`` gate
fails a store that lacks any record of the truth, whatever its recall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._protocol import VectorStore
from ._truth import GroundTruth

__all__ = ["SHOWN_KEYS", "RecordCheck", "check_records"]

SHOWN_KEYS = 20
"""Missing and extra keys named per store (the totals are exact)."""


@dataclass(frozen=True)
class RecordCheck:
    """One store's records against the truth's."""

    count: int
    """Records the store holds (its key scan)."""
    truth: int
    """Records the truth holds."""
    missing: int
    """Truth keys the store does not hold."""
    extra: int
    """Keys the store holds that the truth does not."""
    missing_keys: tuple[str, ...] = ()
    """The first :data:`SHOWN_KEYS` missing keys, sorted."""
    extra_keys: tuple[str, ...] = ()
    """The first :data:`SHOWN_KEYS` extra keys, sorted."""
    missing_set: frozenset[str] = frozenset()
    """Every missing key (what the per-query diffs mark as missing)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "truth": self.truth,
            "missing": self.missing,
            "extra": self.extra,
            "missing_keys": list(self.missing_keys),
            "extra_keys": list(self.extra_keys),
        }


def of_truth(ground: GroundTruth) -> RecordCheck:
    """The truth's own store: it holds every truth record by definition."""
    return RecordCheck(len(ground), len(ground), 0, 0)


def check_records(store: VectorStore, ground: GroundTruth) -> RecordCheck:
    """List ``store``'s keys (no vectors or metadata) and match them with the truth's."""
    index = ground.index
    seen = np.zeros(len(index), dtype=np.bool_)
    count = 0
    extra: list[str] = []
    extra_total = 0
    for page in store.scan(include=[]):
        for record in page:
            count += 1
            row = index.row.get(record.key)
            if row is None:
                extra_total += 1
                if len(extra) < SHOWN_KEYS * 50:
                    extra.append(record.key)
            else:
                seen[row] = True
    lost = [str(k) for k in index.keys[~seen]]
    return RecordCheck(
        count,
        len(index),
        len(lost),
        extra_total,
        tuple(sorted(lost)[:SHOWN_KEYS]),
        tuple(sorted(extra)[:SHOWN_KEYS]),
        frozenset(lost),
    )
