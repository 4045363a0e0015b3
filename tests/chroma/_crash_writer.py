"""A writer to kill: full-replace upserts of the same keys, one version after another.

``python _crash_writer.py seed URL`` creates the collection with version 0 of every key;
``python _crash_writer.py write URL FIRST`` upserts version FIRST, FIRST + 1, … of every key and
prints each version once ``upsert`` returned (acknowledged); ``python _crash_writer.py dump URL``
prints every stored record as JSON. Run as a script (a fresh process each time: an
embedded Chroma directory must not be open in two processes at once).
"""

from __future__ import annotations

import json
import sys
from typing import Any

KEYS = [f"doc{i // 4}.md#{i % 4}" for i in range(240)]
DIMENSION = 4


def version(key: str, v: int) -> tuple[list[float], dict[str, Any], str | None]:
    """Version ``v`` of ``key``: vector, metadata and text. Consecutive versions differ in
    which keys they have and in the type of ``shape`` (list or scalar), so a merge of two
    versions (Chroma's own upsert) equals neither."""
    i = KEYS.index(key)
    meta: dict[str, Any] = {"v": v, f"only{v % 3}": i, "tags": [f"t{v}", f"k{i}"][: 1 + v % 2]}
    meta["shape"] = [v, i] if v % 2 else f"s{v}"
    if v % 4 == 0:
        meta["rare"] = True
    # every fifth version has no text: replacing a text by none is one call too
    text = None if v % 5 == 0 else f"{key} version {v}"
    return [float(i + 1), float(v % 1000), 1.0, float(i % 7)], meta, text


def _write(url: str, first: int, forever: bool = True) -> None:
    import vectorport

    store = vectorport.connect(url, dimension=DIMENSION, metric="euclidean")
    print("ready", flush=True)
    v = first
    while forever or v == first:
        store.upsert(vectorport.Record(key, *version(key, v)) for key in KEYS)
        print(v, flush=True)
        v += 1
    store.close()


def stored(url: str) -> dict[str, Any]:
    """Every record of the collection at ``url``: key → [vector, metadata, text]."""
    import vectorport

    store = vectorport.connect(url)
    try:
        return {
            r.key: [None if r.vector is None else r.vector.tolist(), r.metadata, r.text]
            for r in store.records(include=["vector", "metadata", "text"])
        }
    finally:
        store.close()


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        _write(sys.argv[2], 0, forever=False)
    elif sys.argv[1] == "write":
        _write(sys.argv[2], int(sys.argv[3]))
    else:
        print(json.dumps(stored(sys.argv[2])))
