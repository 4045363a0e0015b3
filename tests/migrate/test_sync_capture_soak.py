"""A bounded soak of ``sync --follow`` (issue 42): about 500 writes a second into a captured
table for ``VECTORPORT_SOAK_SECONDS`` (default 80), with a column added, the table rebuilt
(dropped and created again, then its capture installed again, as the error says) and the
follower killed with ``SIGKILL`` and started again, while the source's PostgreSQL sessions are
sampled from ``pg_stat_activity``. It ends with ``--until-equal`` and the target read back with
boto3 equal to the source read with psycopg, or with a non-zero status naming every difference:
never ``synced`` over one."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import vectorport

from ._raw import raw_metadata
from .test_sync_capture import DIM, _admin, _env, _follow_cmd, _on
from .test_sync_capture_losses import _sessions, _table

SECONDS = float(os.environ.get("VECTORPORT_SOAK_SECONDS", "80"))
RATE = 500
"""Row writes a second (inserts, updates and deletes, :data:`BATCH` per transaction)."""
BATCH = 50


class _Writer(threading.Thread):
    """Writes about :data:`RATE` rows a second with psycopg; pauses while the table is rebuilt."""

    def __init__(self, pg_dir: Path, table: str) -> None:
        super().__init__(daemon=True)
        self.pg_dir, self.table = pg_dir, table
        self.stop, self.paused = threading.Event(), threading.Event()
        self.writes = 0
        self.errors: list[str] = []

    def run(self) -> None:
        rng = random.Random(42)
        with _admin(self.pg_dir) as conn:
            while not self.stop.is_set():
                if self.paused.is_set():
                    time.sleep(0.05)
                    continue
                t0 = time.monotonic()
                try:
                    with conn.transaction():
                        self.writes += self._batch(conn, rng)
                except Exception as exc:  # the table rebuilt under a write: counted, not fatal
                    self.errors.append(str(exc))
                time.sleep(max(0.0, BATCH / RATE - (time.monotonic() - t0)))

    def _batch(self, conn: Any, rng: random.Random) -> int:
        """:data:`BATCH` row writes in two statements, a fifth of them deletes; how many."""
        keys = list(dict.fromkeys(f"doc/{rng.randrange(0, 2000):05d}#c" for _ in range(BATCH)))
        gone, kept = keys[: BATCH // 5], keys[BATCH // 5 :]
        conn.execute(f"DELETE FROM {self.table} WHERE key = ANY(%s)", (gone,))
        vecs = ["[" + ",".join(f"{rng.uniform(-1, 1):.4f}" for _ in range(DIM)) + "]" for _ in kept]
        metas = [json.dumps({"n": rng.randrange(1000)}) for _ in kept]
        conn.execute(
            f"INSERT INTO {self.table} (key, embedding, metadata) SELECT k, e::vector, m::jsonb "
            "FROM unnest(%s::text[], %s::text[], %s::text[]) AS t(k, e, m) "
            "ON CONFLICT (key) DO UPDATE SET embedding = excluded.embedding, metadata = excluded.metadata",
            (kept, vecs, metas),
        )
        return len(keys)


class _Sampler(threading.Thread):
    """Samples the sessions of application name ``name`` (this test's processes: libpq's
    ``PGAPPNAME``, inherited by the followers) twice a second."""

    def __init__(self, pg_dir: Path, name: str) -> None:
        super().__init__(daemon=True)
        self.pg_dir, self.name = pg_dir, name
        self.stop = threading.Event()
        self.samples: list[int] = []

    def run(self) -> None:
        while not self.stop.wait(0.5):
            self.samples.append(_sessions(self.pg_dir, self.name))


def _start(source: str, target: str, state: Path, *extra: str) -> subprocess.Popen[str]:
    """A follower; its stdout (a JSON line per read) goes nowhere, its stderr to a file
    beside the state (``_stderr`` reads it)."""
    with open(state.with_suffix(".err"), "w") as err:
        return subprocess.Popen(
            _follow_cmd(source, target, state, *extra),
            stdout=subprocess.DEVNULL,
            stderr=err,
            text=True,
            env=_env(),
        )


def _stderr(state: Path) -> str:
    return state.with_suffix(".err").read_text()


def _rebuild(
    source: str, pg_dir: Path, writer: _Writer, follower: subprocess.Popen[str], state: Path
) -> None:
    """Rebuild the table in one transaction (a new table with its rows, swapped in for the old
    one, as a repack does): the follower stops with an error, never "synced"; then install its
    capture again, as that error says."""
    table = _table(source)
    writer.paused.set()
    time.sleep(0.3)
    with _admin(pg_dir) as conn, conn.transaction():
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
        conn.execute(f"CREATE TABLE {table} (LIKE {table}_old INCLUDING ALL)")
        cols = conn.execute(
            "SELECT string_agg(quote_ident(attname), ', ') FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attnum > 0 AND NOT attisdropped AND attgenerated = ''",
            (f"{table}_old",),
        ).fetchone()[0]
        conn.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {table}_old")
        conn.execute(f"DROP TABLE {table}_old")
    follower.wait(timeout=60)
    err = _stderr(state)
    assert follower.returncode != 0, err
    assert "no longer covers" in err, err
    _on(source, "teardown_capture")
    _on(source, "setup_capture", "slot")
    writer.paused.clear()


def _raw_source(source: str, pg_dir: Path) -> dict[str, dict[str, Any]]:
    """The source's records as the target should hold them, read with psycopg: the metadata
    column, with the added ``owner`` column mapped into it."""
    with _admin(pg_dir) as conn:
        rows = conn.execute(f"SELECT key, metadata, owner FROM {_table(source)}").fetchall()
    return {str(k): {**dict(m), "owner": owner} for k, m, owner in rows}


@pytest.fixture
def soak_source(url_for: Callable[..., str], pg_dir: Path) -> Iterator[str]:
    """A table of its own (rebuilt by the test, so dropped by it with SQL) and its capture."""
    url = url_for("pgvector")
    vectorport.connect(url, dimension=DIM).close()
    yield url
    with _admin(pg_dir) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {_table(url)}")
    subprocess.run(
        [sys.executable, "-m", "vectorport", "sync", "--teardown-capture", url],
        capture_output=True,
        env=_env(),
        timeout=120,
        check=True,
    )


@pytest.mark.slow
@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_soak_follow_never_says_synced_over_a_difference(
    soak_source: str,
    url_for: Callable[..., str],
    tmp_path: Path,
    pg_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = f"soak-{os.getpid()}"
    monkeypatch.setenv("PGAPPNAME", name)  # the sessions counted are this test's, not another worker's
    source = soak_source
    target, state = url_for("s3vectors"), tmp_path / "s.sqlite"
    _on(source, "setup_capture", "slot")
    base = _sessions(pg_dir, name)
    writer, sampler = _Writer(pg_dir, _table(source)), _Sampler(pg_dir, name)
    sampler.start()
    writer.start()
    rng = random.Random(7)
    events = {"kills": 0, "refused": 0}
    start = time.monotonic()
    schema_at, rebuild_at = SECONDS * 0.35, SECONDS * 0.65
    proc = _start(source, target, state)
    try:
        while (elapsed := time.monotonic() - start) < SECONDS:
            time.sleep(rng.uniform(4.0, 9.0))
            if schema_at and elapsed > schema_at:
                with _admin(pg_dir) as conn:
                    conn.execute(f"ALTER TABLE {_table(source)} ADD COLUMN owner text DEFAULT 'alice'")
                schema_at = 0.0
            if rebuild_at and elapsed > rebuild_at:
                _rebuild(source, pg_dir, writer, proc, state)
                rebuild_at = 0.0
                events["refused"] += 1
            else:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                events["kills"] += 1
            proc = _start(source, target, state)
    finally:
        writer.stop.set()
        writer.join()
        proc.kill()
        proc.wait()
    final = subprocess.Popen(
        _follow_cmd(source, target, state, "--until-equal"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    out, err = final.communicate(timeout=300)
    assert out.strip(), err
    sampler.stop.set()
    sampler.join()
    report = json.loads(out.strip().splitlines()[-1])
    src, dst = _raw_source(source, pg_dir), raw_metadata(target)
    differences = sorted(k for k in src.keys() | dst.keys() if src.get(k) != dst.get(k))
    print(
        f"soak: {SECONDS:.0f}s, {writer.writes} writes ({writer.writes / SECONDS:.0f}/s), {events}, "
        f"sessions {base} -> max {max(sampler.samples)}, final {report['status']}, {len(src)} records"
    )
    if final.returncode == 0:
        assert report["status"] == "verified" and differences == [], differences[:20]
    else:  # a non-zero status names every difference
        check = report["verification"]
        named = {
            item if isinstance(item, str) else item["key"]
            for part in ("missing", "extra", "vectors", "metadata", "text")
            for item in check[part]["items"]
        }
        assert set(differences) <= named, (report, differences[:20])
    assert events["kills"] >= 3 and writer.writes >= RATE * SECONDS * 0.5
    assert max(sampler.samples) - base <= 15, sampler.samples
    assert all(v.get("owner") == "alice" for v in dst.values())
    _on(target, "drop")
