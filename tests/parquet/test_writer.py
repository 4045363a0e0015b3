"""``parquet://DIR`` written in place (:mod:`vectorport.backends.parquet._writer`): copy-on-write
parts under an atomic manifest, small parts merged, one writing process at a time. What a
written snapshot is judged by is what an exported one is: DuckDB/pandas read the parts as they
are, its digests check, ``import``/``verify --expect-digest`` take it."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport.backends.parquet._format import LOCK, MANIFEST, Manifest
from vectorport.backends.parquet._writer import MAX_SMALL_PARTS
from vectorport.snapshot import export, import_snapshot, snapshot_url

pytestmark = pytest.mark.parquet
pytest.importorskip("pyarrow")

SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _rec(i: int, v: int = 0) -> vectorport.Record:
    return vectorport.Record(
        f"doc{i // 4}.md#{i % 4}", [1.0 + i, float(v), 0.5], {"i": i, "v": v}, f"text {i} v{v}"
    )


def _parts(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".parquet"))


def test_a_written_snapshot_is_an_exported_one(tmp_path: Path) -> None:
    directory = tmp_path / "snap"
    store = vectorport.connect(snapshot_url(directory), dimension=3, metric="euclidean")
    empty = Manifest.load(directory)
    assert empty is not None and (empty.count, empty.parts, empty.dimension) == (0, [], 3)
    store.upsert([_rec(i) for i in range(60)])
    store.upsert([_rec(i, 1) for i in range(0, 60, 10)])  # replaces: parts rewritten
    store.delete([_rec(i).key for i in range(1, 60, 10)] + ["never-there"])
    assert store.count() == 54
    store.check_integrity()  # type: ignore[attr-defined]  # every SHA-256 and content digest

    # readers of the bare directory see exactly the snapshot: no leftover part
    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(directory)
    assert sorted(frame["key"]) == sorted(r.key for p in store.scan() for r in p)
    got = {k: v for k, v in zip(frame["key"], frame["metadata"], strict=True)}
    assert got[_rec(10).key] == '{"i":10,"v":1}' and _rec(11).key not in got

    # the digest of the written manifest pins it, as export's does; import takes it
    digest = "sha256:" + hashlib.sha256((directory / MANIFEST).read_bytes()).hexdigest()
    assert store.digest == digest  # type: ignore[attr-defined]
    report = import_snapshot(directory, "memory://parquet-written", expect_digest=digest)
    assert report.status == "verified" and report.verification is not None
    assert vectorport.connect("memory://parquet-written").count() == 54
    vectorport.connect("memory://parquet-written").drop()

    store.drop()
    assert not directory.exists()
    with pytest.raises(vectorport.NotFoundError, match=r"make one with `vectorport\.snapshot\.export\("):
        vectorport.connect(snapshot_url(directory))


def test_only_the_parts_holding_a_key_are_rewritten(tmp_path: Path) -> None:
    store = vectorport.connect(snapshot_url(tmp_path), dimension=3)
    for start in range(0, 40, 10):  # four parts of ten records
        store.upsert([_rec(i) for i in range(start, start + 10)])
    before = {p.file: p for p in store.manifest.parts}  # type: ignore[attr-defined]
    assert len(before) == 4
    store.upsert([_rec(12, 7)])
    store.delete([_rec(13).key])
    after = {p.file: p for p in store.manifest.parts}  # type: ignore[attr-defined]
    untouched = set(before) & set(after)
    assert len(untouched) == 3, "only the part holding keys 10-19 changes"
    assert all(before[f] == after[f] for f in untouched)
    assert _parts(tmp_path) == sorted(after), "replaced parts are removed once the manifest is in place"
    (got,) = store.get([_rec(12).key])
    assert got.metadata == {"i": 12, "v": 7} and store.count() == 39


def test_many_small_writes_are_merged(tmp_path: Path) -> None:
    store = vectorport.connect(snapshot_url(tmp_path), dimension=3)
    for i in range(40):
        store.upsert([_rec(i)])
        assert len(store.manifest.parts) <= MAX_SMALL_PARTS  # type: ignore[attr-defined]
    assert len(_parts(tmp_path)) <= MAX_SMALL_PARTS
    assert store.count() == 40 and len(store.get([_rec(i).key for i in range(40)])) == 40
    store.check_integrity()  # type: ignore[attr-defined]


def test_strays_are_ignored_and_cleaned(tmp_path: Path) -> None:
    """What a write killed before its commit leaves (a part never listed, a temporary file) is
    read by nobody and removed by the next write; the user's own files stay."""
    store = vectorport.connect(snapshot_url(tmp_path), dimension=3)
    store.upsert([_rec(i) for i in range(8)])
    listed = _parts(tmp_path)
    (tmp_path / "part-ffff-00000.parquet").write_bytes(b"not parquet, never listed")
    (tmp_path / ".part-ffff-00001.parquet.tmp").write_bytes(b"half")
    (tmp_path / "notes.txt").write_text("mine")
    fresh = vectorport.connect(snapshot_url(tmp_path))
    assert fresh.count() == 8 and len(fresh.get([_rec(3).key])) == 1
    store.upsert([_rec(9)])
    assert "part-ffff-00000.parquet" not in _parts(tmp_path) and set(listed) <= set(_parts(tmp_path))
    assert not (tmp_path / ".part-ffff-00001.parquet.tmp").exists()
    # another store of the same directory sees the write at its next call
    assert fresh.count() == 9 and fresh.get([_rec(9).key])[0].text == "text 9 v0"
    store.drop()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_bad_records_and_a_pinned_store_write_nothing(tmp_path: Path) -> None:
    store = vectorport.connect(snapshot_url(tmp_path), dimension=3)
    store.upsert([_rec(0)])
    files = sorted(os.listdir(tmp_path))
    for bad in (
        vectorport.Record("k", [1.0, float("nan"), 0.0]),
        vectorport.Record("k", [1.0, 0.0]),
        vectorport.Record("", [1.0, 0.0, 0.0]),
        vectorport.Record("k", [1.0, 0.0, 0.0], {"s": {1, 2}}),
        vectorport.Record("k\ud800", [1.0, 0.0, 0.0]),
    ):
        with pytest.raises(vectorport.ValidationError):
            store.upsert([_rec(1), bad])
    pinned = vectorport.connect(snapshot_url(tmp_path, store.digest))  # type: ignore[attr-defined]
    with pytest.raises(vectorport.UnsupportedFeatureError, match="expect_digest"):
        pinned.upsert([_rec(2)])
    assert sorted(os.listdir(tmp_path)) == files and store.count() == 1


def _python(code: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC_ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_one_writing_process_at_a_time(tmp_path: Path) -> None:
    store = vectorport.connect(snapshot_url(tmp_path), dimension=3)
    store.upsert([_rec(0)])
    holder = _python(
        f"""
        import fcntl, os, time
        fd = os.open({str(tmp_path / LOCK)!r}, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0); os.write(fd, str(os.getpid()).encode())
        print("locked", flush=True)
        time.sleep(60)
        """
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        with pytest.raises(vectorport.ConflictError, match=f"being written by process {holder.pid}"):
            store.upsert([_rec(1)])
        with pytest.raises(vectorport.ConflictError, match="nothing was written"):
            store.delete([_rec(0).key])
        assert store.count() == 1 and store.get([_rec(0).key])  # readers are not affected
        # an export over it is a writer too: refused before it removes anything
        source = vectorport.connect("memory://other", dimension=3)
        source.upsert([_rec(5)])
        with pytest.raises(vectorport.ConflictError, match="nothing was written"):
            export(source, tmp_path, overwrite=True)
        assert [r.key for r in store.records()] == [_rec(0).key]
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    store.upsert([_rec(1)])  # the lock died with its process
    assert store.count() == 2


def test_a_killed_writer_leaves_a_committed_snapshot(tmp_path: Path) -> None:
    """A writer SIGKILLed at whatever moment (mid-part, mid-merge, between the manifest and the
    clean-up): the snapshot is whole and holds exactly the writes it acknowledged, or one more."""
    writer = _python(
        f"""
        import vectorport
        store = vectorport.connect("parquet://{tmp_path}", dimension=3)
        for n in range(100000):
            store.upsert([vectorport.Record(f"k{{n}}", [1.0, n, 0.5], {{"n": n}}),
                          vectorport.Record("hot", [1.0, 0.0, n], {{"n": n}})])
            print(n, flush=True)
        """
    )
    assert writer.stdout is not None
    seen = [int(writer.stdout.readline()) for _ in range(12)]
    writer.send_signal(signal.SIGKILL)
    out, _ = writer.communicate(timeout=30)
    last = ([*seen, *(int(x) for x in out.split())])[-1]
    snap = vectorport.connect(snapshot_url(tmp_path))
    snap.check_integrity()  # type: ignore[attr-defined]
    n = snap.count() - 2  # k0..kn and "hot"
    assert n in (last, last + 1), (n, last)
    (hot,) = snap.get(["hot"])
    assert hot.metadata == {"n": n} and np.asarray(hot.vector).tolist() == [1.0, 0.0, float(n)]
    assert {r.key for p in snap.scan() for r in p} == {"hot", *(f"k{i}" for i in range(n + 1))}
    snap.upsert([vectorport.Record("after", [1.0, 1.0, 1.0])])  # the next writer cleans up
    listed = {p.file for p in snap.manifest.parts}  # type: ignore[attr-defined]
    assert set(_parts(tmp_path)) == listed
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.ray
def test_ray_runs_a_command_writing_a_snapshot_as_one_task(tmp_path: Path) -> None:
    """Ray workers may all read one snapshot directory, but a migration or sync into one is
    written by one process (the write lock would refuse the others): the runner hands the whole
    command to one task, as for an embedded Chroma directory. Decided before any I/O."""
    pytest.importorskip("ray")
    from vectorport.migrate import MigrateOptions
    from vectorport.ray import RayRunner
    from vectorport.verify._options import VerifyOptions

    snap, other = snapshot_url(tmp_path / "a"), snapshot_url(tmp_path / "b")
    src = "s3vectors://bucket/index?endpoint_url=http://127.0.0.1:1"
    runner = RayRunner(workers=2)
    assert runner.check(MigrateOptions(), src, snap).whole == (snap,)
    assert runner.check(MigrateOptions(), snap, src).whole == ()
    assert runner.check(VerifyOptions(), snap, other).whole == ()
