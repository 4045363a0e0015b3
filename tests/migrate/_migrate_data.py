"""Test data for migrations: chunk records whose keys and metadata are everything a migration
can get wrong (unicode, long text, nested objects, nulls, lists, large integers, booleans, keys
with ``/``, ``#``, spaces and quotes), plus helpers shared by the migrate test modules."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

import vectorport
from vectorport import Capabilities, MetadataRules, Record, StoreURL
from vectorport.backends.memory import MemoryStore
from vectorport.migrate import Transformer
from vectorport.testing import clustered_vectors

DIM = 32
N = 5_000

LOREM = (
    "Le cœur d'un chunk: naïve façade, smörgåsbord, Ελληνικά, русский, 日本語のテキスト, 한국어, "
    "emoji 🚀🧪✅, and plain ASCII for good measure. "
)


def record_key(i: int) -> str:
    if i % 97 == 0:
        return f"docs/ünïcødé/日本語 {i}.md#chunk0"
    return f'docs/dir {i % 7}/it\'s "file" {i // 10}.md#chunk{i % 10}'


def tricky_metadata(i: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "title": f"Café ☕ 日本語 — {i}",
        "count": i,
        "ratio": round(i / 7, 6),
        "draft": i % 3 == 0,
        "tags": ["guide", "api", "faq"][: 1 + i % 3],
        "path/to": f"a/b/{i % 5}",
        "section #": i % 11,
        "with space": "yes" if i % 2 else "no",
        'quote"d': "\"double\" and 'single'",
        "it's": True,
    }
    if i % 5 == 0:
        meta["author"] = {"name": f"user {i % 13}", "id": i % 13, "roles": ["dev", "ops"]}
    if i % 7 == 0:
        meta["reviewer"] = None
    if i % 11 == 0:
        meta["big"] = 2**60 + i
    if i % 13 == 0:
        meta["mixed"] = [1, "two", True]
    if i % 17 == 0:
        meta["empty"] = []
    if i % 19 == 0:
        meta["scores"] = [0.5, 1.25, i]
    return meta


def tricky_text(i: int) -> str | None:
    if i % 23 == 0:
        return None
    if i % 10 == 0:
        return (LOREM * 40)[: 3000 + i % 500]  # long chunks (several KB, multi-byte)
    return f"chunk {i}: {LOREM}"


def tricky_records(n: int = N, dim: int = DIM, seed: int = 7) -> list[Record]:
    vectors, _ = clustered_vectors(n, dim, clusters=12, seed=seed)
    return [Record(record_key(i), vectors[i], tricky_metadata(i), tricky_text(i)) for i in range(n)]


def fit_to(records: list[Record], rules: MetadataRules) -> list[Record]:
    """The records as a backend with ``rules`` can hold them (stringify what it cannot)."""
    t = Transformer(rules, "stringify")
    out = []
    for r in records:
        x = t.apply(r.metadata, r.text)
        assert not x.unresolved, x.unresolved
        out.append(Record(r.key, r.vector, x.metadata, x.text))
    return out


# A memory store with Chroma-like metadata rules: a lossy target without a server.
FLAT_RULES = MetadataRules(
    nested_objects=False, null=False, empty_lists=False, mixed_lists=False, max_int=2**53
)


class FlatMemoryStore(MemoryStore):
    """Memory store that refuses what Chroma refuses (nested objects, nulls, odd lists)."""

    capabilities: ClassVar[Capabilities] = Capabilities(
        **{**MemoryStore.capabilities.__dict__, "metadata": FLAT_RULES}
    )


class NoDotMemoryStore(MemoryStore):
    capabilities: ClassVar[Capabilities] = Capabilities(
        **{**MemoryStore.capabilities.__dict__, "metrics": frozenset({vectorport.Metric.COSINE})}
    )


def unbound(cls: type[MemoryStore], name: str) -> MemoryStore:
    return cls.from_url(StoreURL.parse(f"memory://{name}"))


def all_records(store: vectorport.VectorStore) -> dict[str, Record]:
    return {r.key: r for page in store.scan() for r in page}


def assert_same_vectors(a: Record, b: Record) -> None:
    assert np.allclose(np.asarray(a.vector), np.asarray(b.vector), rtol=0, atol=1e-6)
