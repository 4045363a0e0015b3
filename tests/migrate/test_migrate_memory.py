"""The migration engine on memory:// stores: plan, policies, copy, checkpoint/resume, shards,
verification, CLI. Real backend pairs are in the other modules of this folder."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record, TransientError
from vectorport._exit import ExitCode
from vectorport._retry import RetryPolicy
from vectorport._validate import Batch
from vectorport.backends.memory import MemoryStore
from vectorport.cli import app
from vectorport.exceptions import BackendError
from vectorport.migrate import Checkpoint, MetadataPolicy, PlanRefusedError, plan, verify
from vectorport.verify._merged import verify_merged

from ._migrate_data import (
    FlatMemoryStore,
    NoDotMemoryStore,
    all_records,
    assert_same_vectors,
    tricky_records,
    unbound,
)

pytestmark = pytest.mark.memory

N = 600
DIM = 16
_names = itertools.count()
FAST = RetryPolicy(attempts=20, base=0.001, cap=0.01)


def fresh(prefix: str = "m") -> str:
    return f"memory://mig-{prefix}-{next(_names)}"


@pytest.fixture
def source() -> Any:
    url = fresh("src")
    store = vectorport.connect(url, dimension=DIM)
    store.upsert(tricky_records(N, DIM))
    yield url
    store.drop()


def test_memory_to_memory_copies_everything_exactly(source: str) -> None:
    dst = fresh("dst")
    report = vectorport.migrate.run(source, dst, batch_size=64, concurrency=3)
    assert report.status == "verified" and report.exit_code == 0
    assert report.copy is not None and report.copy.records == N and report.copy.complete
    assert report.plan is not None and not report.plan.lossy and report.plan.records == N
    v = report.verification
    assert v is not None and v.ok and v.compared == N and v.source_count == v.target_count == N
    assert v.queries is not None and v.queries.target_recall == 1.0 and v.queries.mean_overlap == 1.0
    a, b = all_records(vectorport.connect(source)), all_records(vectorport.connect(dst))
    assert a.keys() == b.keys()
    for key, rec in a.items():
        assert rec.metadata == b[key].metadata and rec.text == b[key].text
        assert_same_vectors(rec, b[key])
    json.loads(report.to_json())
    vectorport.connect(dst).drop()


def test_plan_writes_nothing(source: str) -> None:
    dst = fresh("dst")
    report = vectorport.migrate.run(source, dst, plan_only=True)
    assert report.status == "planned" and report.copy is None
    with pytest.raises(vectorport.NotFoundError):
        vectorport.connect(dst)


def test_lossy_plan_names_records_and_paths(source: str) -> None:
    target = unbound(FlatMemoryStore, f"flat-{next(_names)}")
    p = plan(source, target)
    assert p.refused and p.lossy
    kinds = set(p.metadata_problems)
    assert {"nested object", "null value", "mixed or nested list", "empty list"} <= kinds
    assert "integer beyond exact range" in kinds
    nested = p.metadata_problems["nested object"]
    assert nested.records == len([i for i in range(N) if i % 5 == 0])
    first = nested.occurrences.items[0]
    assert first["path"] == "metadata.author" and first["key"].startswith("docs/")
    assert "metadata_policy='flatten'" in (p.suggestion() or "")  # the CLI says --metadata-policy
    assert p.policy_outcomes == {"flatten": 0, "stringify": 0, "drop": 0}
    with pytest.raises(PlanRefusedError) as info:
        vectorport.migrate.run(source, target)
    assert "metadata_policy=" in str(info.value)
    assert not target.list_collections().count(target.collection)  # nothing written, not created


@pytest.mark.parametrize("policy", ["flatten", "stringify", "drop"])
def test_policies_copy_and_verify(source: str, policy: str) -> None:
    target = unbound(FlatMemoryStore, f"flat-{policy}-{next(_names)}")
    report = vectorport.migrate.run(source, target, metadata_policy=policy)
    assert report.status == "verified", report.to_json()
    assert report.plan is not None and report.plan.transforms and not report.plan.refused
    got = all_records(target)
    rec = got[next(r.key for r in tricky_records(1, DIM))]  # record 0: nested, null, big int …
    if policy == "flatten":
        assert rec.metadata["author.name"] == "user 0" and rec.metadata["author.roles"] == ["dev", "ops"]
        assert rec.metadata["reviewer"] == "null" and rec.metadata["big"] == str(2**60)
    elif policy == "stringify":
        assert json.loads(rec.metadata["author"]) == {"name": "user 0", "id": 0, "roles": ["dev", "ops"]}
    else:
        assert "author" not in rec.metadata and "reviewer" not in rec.metadata
        assert rec.metadata["title"] == "Café ☕ 日本語 — 0"
    assert len(got) == N
    target.drop()


def test_text_key_moves_metadata_into_text() -> None:
    src = vectorport.connect(fresh("tk"), dimension=4)
    src.upsert([Record(f"k{i}", [1, i, 0, 0], {"page_content": f"hello {i}", "n": i}) for i in range(20)])
    dst = fresh("tkd")
    report = vectorport.migrate.run(src, dst, text_key="page_content")
    assert report.status == "verified"
    got = all_records(vectorport.connect(dst))
    assert got["k3"].text == "hello 3" and got["k3"].metadata == {"n": 3}
    assert report.plan is not None and "text_from_key: text key" in report.plan.transforms


def test_incompatible_metric_and_key_refused() -> None:
    src = vectorport.connect(fresh("dot"), dimension=4, metric="dot")
    src.upsert([Record("a", [1, 0, 0, 0])])
    p = plan(src, unbound(NoDotMemoryStore, "nodot"))
    assert p.refused and "no dot metric" in p.incompatible[0]
    existing = vectorport.connect(fresh("other"), dimension=5, metric="dot")
    p = plan(src, existing)
    assert p.refused and "5 dimensions" in p.incompatible[0]


class ShortKeyStore(MemoryStore):
    capabilities: ClassVar[vectorport.Capabilities] = vectorport.Capabilities(
        **{**MemoryStore.capabilities.__dict__, "max_key_bytes": 20}
    )


def test_rejected_keys_refused(source: str) -> None:
    p = plan(source, unbound(ShortKeyStore, "short"))
    assert p.refused and p.key_problems is not None and p.key_problems.records == N
    assert "rename" in p.reasons()[0]


class FlakyStore(MemoryStore):
    """Fails some writes: TransientError (throttling) or, once armed, a hard error; writes
    finish out of order (random sleeps) so the checkpoint watermark is exercised."""

    transient_rate: ClassVar[float] = 0.0
    fail_after: ClassVar[int | None] = None
    writes: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def _write(self, batch: Batch) -> None:
        time.sleep(random.random() * 0.004)
        cls = type(self)
        with cls.lock:
            cls.writes += 1
            n = cls.writes
        if cls.fail_after is not None and n > cls.fail_after:
            raise BackendError("injected failure")
        if random.random() < cls.transient_rate:
            raise TransientError("injected throttling (SlowDown)")
        super()._write(batch)


def test_transient_errors_are_retried(source: str) -> None:
    class Throttled(FlakyStore):
        transient_rate = 0.3

    target = unbound(Throttled, f"thr-{next(_names)}")
    target.retry = RetryPolicy(attempts=1)  # the migration's own backoff must do the work
    report = vectorport.migrate.run(source, target, batch_size=25, concurrency=4, retry=FAST)
    assert report.status == "verified"
    assert report.copy is not None and report.copy.retries > 0


def test_one_retry_layer_and_every_retry_counted(source: str) -> None:
    class ThrottledTwice(MemoryStore):
        """Each batch is throttled twice, then written."""

        calls: ClassVar[dict[str, int]] = {}

        def _write(self, batch: Batch) -> None:
            first = batch.keys[0]
            n = self.calls[first] = self.calls.get(first, 0) + 1
            if n <= 2:
                raise TransientError("injected throttling (SlowDown)")
            super()._write(batch)

    target = unbound(ThrottledTwice, f"thr2-{next(_names)}")
    target.retry = RetryPolicy(attempts=3, base=0.0001, cap=0.001)  # the store's own policy
    report = vectorport.migrate.run(source, target, batch_size=50, concurrency=2)
    assert report.status == "verified"
    batches = -(-N // 50)
    # 3 attempts per batch by the store's policy alone: no outer loop multiplying them
    assert sum(ThrottledTwice.calls.values()) == 3 * batches
    assert report.copy is not None and report.copy.retries == 2 * batches


def _covered_keys(source: vectorport.VectorStore, cursor: str | None, complete: bool, page: int) -> list[str]:
    """Keys of the source pages up to (and including) the page whose cursor is ``cursor``."""
    keys: list[str] = []
    if cursor is None and not complete:
        return keys
    for p in source.scan(batch_size=page):
        keys.extend(r.key for r in p)
        if p.cursor == cursor:
            break
    return keys


def test_killed_run_resumes_without_loss(source: str, tmp_path: Path) -> None:
    class Dying(FlakyStore):
        fail_after = 9

    ck = tmp_path / "ck.json"
    name = f"dying-{next(_names)}"
    target = unbound(Dying, name)
    with pytest.raises(BackendError):
        vectorport.migrate.run(source, target, batch_size=10, concurrency=4, checkpoint=ck, verify=False)
    saved = Checkpoint.load(ck)
    assert saved is not None and not saved.complete and 0 < saved.copied < N
    src = vectorport.connect(source)
    # the invariant: everything up to the checkpoint's cursor is in the target
    covered = _covered_keys(src, saved.cursor, saved.scanned, 10)
    assert len(covered) == saved.copied
    assert len(target.get(covered, include=[])) == len(covered)
    resumed = vectorport.migrate.run(source, unbound(MemoryStore, name), checkpoint=ck, resume=True)
    assert resumed.status == "verified"
    assert resumed.copy is not None and resumed.copy.resumed_from == saved.copied
    assert resumed.copy.records == N - saved.copied
    again = vectorport.migrate.run(source, unbound(MemoryStore, name), checkpoint=ck, resume=True)
    assert again.already_complete and again.copy is None and again.status == "verified"


class _DeferredIndexStore(MemoryStore):
    """A target whose bulk load ends with deferred work (as pgvector builds its HNSW index),
    which a kill can interrupt."""

    finished: ClassVar[list[str]] = []
    die_on_exit: ClassVar[bool] = False

    @contextmanager
    def bulk_load(self, expected: int | None = None) -> Iterator[None]:
        yield
        if type(self).die_on_exit:
            raise BackendError("killed during the index build")
        type(self).finished.append(self.collection)


def test_a_kill_during_the_final_index_build_is_not_complete(source: str, tmp_path: Path) -> None:
    ck = tmp_path / "ck.json"
    name = f"deferred-{next(_names)}"
    _DeferredIndexStore.die_on_exit = True
    try:
        with pytest.raises(BackendError):
            vectorport.migrate.run(source, unbound(_DeferredIndexStore, name), checkpoint=ck, verify=False)
    finally:
        _DeferredIndexStore.die_on_exit = False
    saved = Checkpoint.load(ck)
    assert saved is not None and saved.scanned and saved.copied == N
    assert not saved.complete, "every record was written, but the target's index was not built"
    resumed = vectorport.migrate.run(source, unbound(_DeferredIndexStore, name), checkpoint=ck, resume=True)
    assert not resumed.already_complete and resumed.status == "verified"
    assert resumed.copy is not None and resumed.copy.records == 0  # nothing copied twice
    assert _DeferredIndexStore.finished == [name]  # the deferred work was redone
    final = Checkpoint.load(ck)
    assert final is not None and final.complete


def test_resume_refuses_another_migrations_checkpoint(source: str, tmp_path: Path) -> None:
    ck = tmp_path / "ck.json"
    vectorport.migrate.run(source, fresh("a"), checkpoint=ck)
    with pytest.raises(vectorport.ConfigurationError, match="another migration"):
        vectorport.migrate.run(source, fresh("b"), checkpoint=ck, resume=True)


def test_half_populated_target_is_idempotent(source: str) -> None:
    dst = fresh("half")
    src = vectorport.connect(source)
    half = list(src.records())[: N // 2]
    vectorport.connect(dst, dimension=DIM).upsert(half)
    report = vectorport.migrate.run(source, dst)
    assert report.status == "verified"
    assert report.plan is not None and report.plan.target_count == N // 2
    assert vectorport.connect(dst).count() == N


def test_shards_each_with_checkpoint(source: str, tmp_path: Path) -> None:
    dst = fresh("shard")
    ck = tmp_path / "ck.json"
    copied = 0
    for i in range(3):
        r = vectorport.migrate.run(source, dst, shard=f"{i}/3", checkpoint=ck)
        assert r.status == "verified" and r.copy is not None
        assert r.verification is not None and r.verification.skipped
        copied += r.copy.records
        assert (tmp_path / f"ck.shard-{i}-of-3.json").exists()
    assert copied == N
    assert verify(source, dst).ok


def test_verify_reports_every_kind_of_difference(source: str) -> None:
    dst = fresh("diff")
    vectorport.migrate.run(source, dst)
    store = vectorport.connect(dst)
    keys = list(all_records(store))
    store.delete([keys[0]])
    r1 = store.get([keys[1]])[0]
    store.upsert([Record(r1.key, r1.vector, {**r1.metadata, "title": "changed"}, r1.text)])
    r2 = store.get([keys[2]])[0]
    store.upsert([Record(r2.key, [x + 0.01 for x in r2.vector], r2.metadata, "other text")])  # type: ignore[union-attr]
    store.upsert([Record("extra#1", [1.0] * DIM)])
    report = verify(source, dst, cap=5, sample_queries=0)
    assert not report.ok
    assert report.missing.items == [keys[0]] and report.extra.items == ["extra#1"]
    assert [d["key"] for d in report.metadata] == [keys[1]]
    assert report.metadata.items[0]["paths"] == ["metadata.title"]
    assert [d["key"] for d in report.vectors] == [keys[2]]
    assert [d["key"] for d in report.text] == [keys[2]]
    assert report.differences == 5  # missing, extra, metadata, vector, text (counts equal)
    json.dumps(report.to_dict())


def test_verify_of_collections_of_other_dimensions_is_a_difference_not_a_failure() -> None:
    """Every vector differs and the sampled queries are skipped (a source vector is no query
    for the target): exit 1 with the dimensions named, not a query error after the data pass."""
    src = vectorport.connect(fresh("dim8"), dimension=8)
    dst = vectorport.connect(fresh("dim16"), dimension=16)
    src.upsert([Record(f"k{i}", [1.0, float(i)] + [0.0] * 6) for i in range(30)])
    dst.upsert([Record(f"k{i}", [1.0, float(i)] + [0.0] * 14) for i in range(30)])
    report = verify(src.url.raw, dst.url.raw, sample_queries=5)
    assert report.exit_code == ExitCode.PROBLEM and not report.ok
    assert report.collection == ["dimension: source 8, target 16"] and report.vectors.total == 30
    assert report.queries is None and report.skipped == ["queries: the collections' dimensions differ"]
    res = runner.invoke(app, ["verify", src.url.raw, dst.url.raw])
    assert res.exit_code == ExitCode.PROBLEM and "dimension: source 8, target 16" in res.stdout, res.output
    merged = verify_merged(src.url.raw, dst.url.raw, segments=2, sample_queries=5)  # Ray's verification
    assert (merged.collection, merged.skipped, merged.queries) == (report.collection, report.skipped, None)
    assert merged.vectors.total == 30 and merged.exit_code == ExitCode.PROBLEM


def test_reembed_with_ingest_embedders() -> None:
    src = vectorport.connect(fresh("re-src"), dimension=4)
    src.upsert([Record(f"k{i}", [1, i, 0, 0], {"n": i}, f"text {i}") for i in range(30)])
    src.upsert([Record("no-text", [1, 1, 1, 1], {"n": -1})])
    refused = plan(src, fresh("re-x"))  # no reembed: fine
    assert not refused.refused
    with pytest.raises(PlanRefusedError, match="no text to re-embed"):
        vectorport.migrate.run(src, fresh("re-y"), reembed="hash:24")
    src.delete(["no-text"])
    dst = fresh("re")
    report = vectorport.migrate.run(src, dst, reembed="hash:24")
    assert report.status == "verified", report.to_json()
    assert report.verification is not None and report.verification.skipped
    with vectorport.connect(dst) as target:
        assert target.spec.dimension == 24 and target.spec.embedding_model == "hash:24"
        rec = target.get(["k3"])[0]
        assert rec.vector is not None and len(rec.vector) == 24 and rec.text == "text 3"


def test_bad_shard_and_policy() -> None:
    with pytest.raises(vectorport.ConfigurationError):
        vectorport.migrate.run("memory://x", "memory://y", shard="3/3")
    with pytest.raises(vectorport.ConfigurationError):
        MetadataPolicy.parse("squash")


# ------------------------------------------------------------------ CLI (in-process)
runner = CliRunner()


def test_cli_migrate_and_verify_json(source: str, tmp_path: Path) -> None:
    dst = fresh("cli")
    res = runner.invoke(
        app,
        ["migrate", source, dst, "--json", "--checkpoint", str(tmp_path / "c.json"), "--batch-size", "50"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["status"] == "verified" and data["copy"]["records"] == N
    res = runner.invoke(app, ["verify", source, dst, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["ok"]
    vectorport.connect(dst).upsert([Record("extra#2", [1.0] * DIM)])
    res = runner.invoke(app, ["verify", source, dst])
    assert res.exit_code == ExitCode.PROBLEM == 1 and "extra#2" in res.stdout


def test_cli_migrate_with_differences_exits_1(source: str) -> None:
    dst = fresh("cli-extra")
    vectorport.connect(dst, dimension=DIM).upsert([Record("extra#3", [1.0] * DIM)])
    res = runner.invoke(app, ["migrate", source, dst, "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == ExitCode.PROBLEM == data["exit_code"] == 1, res.output
    assert data["status"] == "differences" and data["verification"]["extra"]["items"] == ["extra#3"]


def test_cli_plan_human_output(source: str) -> None:
    res = runner.invoke(app, ["migrate", source, fresh("p"), "--plan"])
    assert res.exit_code == 0, res.output
    assert "records" in res.stdout


def test_cli_reembed_and_bad_shard_exit_codes(source: str) -> None:
    res = runner.invoke(app, ["migrate", source, fresh("r"), "--reembed", "hash:nope"])
    assert res.exit_code == ExitCode.USAGE == 2 and "bad hash embedder" in res.output, res.output
    res = runner.invoke(app, ["migrate", source, fresh("r"), "--shard", "nope"])
    assert res.exit_code == ExitCode.USAGE


def test_a_collection_is_never_migrated_onto_itself(source: str) -> None:
    before = vectorport.connect(source).count()
    with pytest.raises(vectorport.ConfigurationError, match="same collection"):
        vectorport.migrate.run(source, source)
    with pytest.raises(vectorport.ConfigurationError, match="same collection"):
        vectorport.migrate.run(source, vectorport.connect(source))
    assert vectorport.connect(source).count() == before
