"""``sync`` from a pgvector source with change capture (a logical replication slot or the outbox
trigger): passes that apply what was captured instead of scanning, ``--follow`` into the bucket
server and Chroma while the source keeps changing, ``kill -9`` of ``--follow`` at random moments,
the outbox run by a role without REPLICATION, and teardown leaving nothing on the server."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.migrate import sync

from ._raw import raw_metadata

DIM = 8
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _record(i: int, version: int) -> Record:
    vec = np.random.default_rng(i * 7919 + version).standard_normal(DIM).astype(np.float32)
    return Record(f"doc/{i:05d}#c", vec, {"i": i, "v": version}, f"chunk {i} v{version}")


def _admin(pg_dir: Path) -> Any:
    import psycopg

    from vectorport.backends.pgvector._embedded import embedded_conninfo

    return psycopg.connect(embedded_conninfo(pg_dir), autocommit=True)


def _capture_objects(pg_dir: Path, table: str) -> set[Any]:
    with _admin(pg_dir) as conn:
        return {
            *conn.execute("SELECT slot_name FROM pg_replication_slots WHERE slot_name LIKE 'vectorport%%'"),
            *conn.execute("SELECT pubname FROM pg_publication WHERE pubname LIKE 'vectorport%%'"),
            *conn.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND NOT tgisinternal", (table,)
            ),
            *conn.execute("SELECT relname FROM pg_class WHERE relname LIKE 'vectorport_outbox%%'"),
        }


_BEFORE: dict[Path, set[Any]] = {}


def _baseline(pg_dir: Path, table: str) -> None:
    """What capture objects the server holds before a test (another test of the session, in
    whatever order the files run, may have left its own): the test judges only its own."""
    _BEFORE[pg_dir] = _capture_objects(pg_dir, table)


def _leftovers(pg_dir: Path, table: str) -> list[Any]:
    """The capture objects this test left behind on the source's server."""
    return sorted(_capture_objects(pg_dir, table) - _BEFORE.get(pg_dir, set()))


def _confirmed(pg_dir: Path) -> int:
    from vectorport.backends.pgvector._pgoutput import lsn_int

    with _admin(pg_dir) as conn:
        row = conn.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name LIKE 'vectorport%%'"
        ).fetchone()
    return lsn_int(row[0])


def _on(url: str, what: str, *args: Any) -> Any:
    """Call one store method on a freshly opened store, and close it."""
    store = vectorport.connect(url)
    try:
        return getattr(store, what)(*args)
    finally:
        store.close()


def _assert_equal(source: str, target: str, expected: dict[str, Any] | None = None) -> None:
    check = vectorport.verify(source, target, sample_queries=3)
    assert check.data_equal, check.to_dict()
    expected = raw_metadata(source) if expected is None else expected  # psycopg
    assert raw_metadata(target) == expected  # boto3 / chromadb / psycopg


@pytest.fixture
def source(url_for: Callable[..., str], pg_dir: Path) -> Iterator[str]:
    url = url_for("pgvector")
    store = vectorport.connect(url, dimension=DIM)
    store.upsert([_record(i, 0) for i in range(60)])
    store.close()
    yield url
    _on(url, "teardown_capture")
    _on(url, "drop")


def _writes(url: str, rounds: int, seed: int, start: int = 0) -> None:
    """Upserts, metadata-only updates and deletes, a few per transaction."""
    rng = random.Random(seed)
    store = vectorport.connect(url)
    try:
        for r in range(rounds):
            i = rng.randrange(0, 90)
            kind = rng.random()
            if kind < 0.5:
                store.upsert([_record(i, start + r), _record(rng.randrange(0, 90), start + r)])
            elif kind < 0.8:
                got = store.get([f"doc/{i:05d}#c"])
                if got:
                    rec = got[0]
                    store.upsert([Record(rec.key, rec.vector, {**rec.metadata, "touched": r}, rec.text)])
            else:
                store.delete([f"doc/{i:05d}#c", f"doc/{rng.randrange(0, 90):05d}#c"])
    finally:
        store.close()


@pytest.mark.pgvector
@pytest.mark.parametrize("method", ["slot", "outbox"])
def test_passes_apply_what_was_captured(
    source: str, url_for: Callable[..., str], tmp_path: Path, method: str
) -> None:
    target = url_for("pgvector")
    _baseline(Path(source.split("://")[1].split("?")[0]), source.split("table=")[1])
    setup = _on(source, "setup_capture", method)
    assert setup.method == method and setup.created
    first = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert first.sync.mode == "full" and first.sync.new == 60
    _writes(source, 40, seed=1)
    second = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert second.sync.mode == "capture"
    assert second.sync.source_read <= 80  # the changed keys, not the 60+ rows
    _assert_equal(source, target)
    assert sync(source, target, state=tmp_path / "s.sqlite", delete=True).sync.written == 0
    table = source.split("table=")[1]
    with _admin(Path(source.split("://")[1].split("?")[0])) as conn:
        for round_ in range(3):  # a transaction right after the last applied one is not skipped
            conn.execute(
                f"INSERT INTO {table} (key, embedding, metadata) VALUES (%s, %s, '{{}}')",
                (f"raw{round_}", "[" + ",".join(["0.5"] * DIM) + "]"),
            )
            assert sync(source, target, state=tmp_path / "s.sqlite", delete=True).sync.new == 1
    removed = _on(source, "teardown_capture")
    assert removed
    assert _leftovers(Path(source.split("://")[1].split("?")[0]), source.split("table=")[1]) == []
    _on(target, "drop")


@pytest.mark.pgvector
def test_truncate_and_capture_of_a_view_and_dimension_change(
    source: str, url_for: Callable[..., str], tmp_path: Path, pg_dir: Path
) -> None:
    target = url_for("pgvector")
    _on(source, "setup_capture", "slot")
    sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    table = source.split("table=")[1]
    with _admin(pg_dir) as conn:
        conn.execute(f"TRUNCATE {table}")
    report = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert report.sync.mode == "capture" and report.sync.deleted == 60
    assert _on(target, "count") == 0
    with _admin(pg_dir) as conn:
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector(4) USING NULL")
        conn.execute(f"INSERT INTO {table} (key, embedding, metadata) VALUES ('x', '[1,2,3,4]', '{{}}')")
    before = _confirmed(pg_dir)
    with pytest.raises(vectorport.exceptions.ConfigurationError, match="vector\\(4\\)"):
        sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert _confirmed(pg_dir) == before  # the position is kept
    with _admin(pg_dir) as conn:
        conn.execute(f"CREATE VIEW {table}_v AS SELECT * FROM {table}")
    view_url = source.replace(f"table={table}", f"table={table}_v&key_column=key")
    view = vectorport.connect(view_url, metric="cosine")
    try:
        with pytest.raises(vectorport.exceptions.ConfigurationError, match="is a view"):
            view.setup_capture()
    finally:
        view.close()
        with _admin(pg_dir) as conn:
            conn.execute(f"DROP VIEW {table}_v")
            conn.execute(f"DELETE FROM {table}")
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({DIM})")
    _on(target, "drop")


def _follow_cmd(source: str, target: str, state: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "vectorport",
        "sync",
        source,
        target,
        "--delete",
        "--follow",
        "--json",
        "--state",
        str(state),
        *extra,
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC_ROOT, env.get("PYTHONPATH")]))
    return env


@pytest.mark.pgvector
@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("s3vectors", marks=pytest.mark.s3vectors),
        pytest.param("chroma", marks=pytest.mark.chroma),
    ],
)
def test_follow_keeps_the_target_equal(
    source: str, url_for: Callable[..., str], tmp_path: Path, backend: str
) -> None:
    target = url_for(backend)
    _on(source, "setup_capture")
    # the writes come first: --until-equal ends at the first pass that finds the two equal, which
    # a follower on a quiet machine reached before writes made a second after its start
    _writes(source, 150, seed=2)
    proc = subprocess.Popen(
        _follow_cmd(source, target, tmp_path / "s.sqlite", "--until-equal"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    lags = [e for e in events if e.get("event") == "lag"]
    assert lags and all("lag_seconds" in e and "behind" in e for e in lags)
    assert events[-1]["status"] == "verified"
    _assert_equal(source, target)
    _on(target, "drop")


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_kill_9_of_follow_loses_and_duplicates_nothing(
    source: str, url_for: Callable[..., str], tmp_path: Path, pg_dir: Path
) -> None:
    target = url_for("s3vectors")
    _on(source, "setup_capture", "slot")
    sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    rng = random.Random(5)
    positions = [_confirmed(pg_dir)]
    for round_ in range(5):
        writer = threading.Thread(target=_writes, args=(source, 60, 10 + round_, 100 * (round_ + 1)))
        writer.start()
        proc = subprocess.Popen(
            _follow_cmd(source, target, tmp_path / "s.sqlite"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        time.sleep(rng.uniform(1.5, 4.0))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        writer.join()
        positions.append(_confirmed(pg_dir))
    final = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert final.sync.mode == "capture"
    positions.append(_confirmed(pg_dir))
    assert positions == sorted(positions) and positions[-1] > positions[0]
    _assert_equal(source, target)
    _on(target, "drop")


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_outbox_follow_by_a_role_without_replication(
    url_for: Callable[..., str], tmp_path: Path, pg_dir: Path
) -> None:
    from urllib.parse import urlsplit, urlunsplit

    from vectorport.backends.pgvector._embedded import embedded_conninfo

    with _admin(pg_dir) as conn:
        conn.execute("DROP SCHEMA IF EXISTS app CASCADE")
        conn.execute("DROP ROLE IF EXISTS app_writer")
        conn.execute("CREATE ROLE app_writer LOGIN NOREPLICATION NOSUPERUSER")
        conn.execute("CREATE SCHEMA app AUTHORIZATION app_writer")
        conn.execute("GRANT CREATE ON DATABASE postgres TO app_writer")
    _baseline(pg_dir, "app.chunks")
    parts = urlsplit(embedded_conninfo(pg_dir))
    source = urlunsplit(parts._replace(netloc="app_writer@")) + "&table=chunks&schema=app"
    target = url_for("s3vectors")
    store = vectorport.connect(source, dimension=DIM)
    try:
        store.upsert([_record(i, 0) for i in range(60)])
        setup = store.setup_capture()
        assert setup.method == "outbox" and "REPLICATION" in setup.reason
    finally:
        store.close()
    # written before the follower starts (it ends at the first pass that finds the two equal,
    # which on a quiet machine came before writes made a second after its start)
    _writes(source, 120, seed=3)
    proc = subprocess.Popen(
        _follow_cmd(source, target, tmp_path / "s.sqlite", "--until-equal"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["sync"]["mode"] in ("full", "capture")
    # changes captured while a full pass read the table stay pending (the scan may or may not have
    # seen them) until a pass applies them: this one (the follower's options, so it goes on from
    # its state) reads them from the outbox, writes nothing and trims them
    last = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert last.sync.mode == "capture" and last.sync.written == 0, last.to_json()
    with _admin(pg_dir) as conn:  # applied rows are trimmed from the outbox
        rows = conn.execute("SELECT key, metadata FROM app.chunks").fetchall()
        _assert_equal(source, target, {str(k): dict(m) for k, m in rows})
        assert conn.execute("SELECT count(*) FROM app.vectorport_outbox_" + _suffix(conn)).fetchone()[0] == 0
    assert _on(source, "teardown_capture")
    assert _leftovers(pg_dir, "app.chunks") == []
    _on(target, "drop")
    with _admin(pg_dir) as conn:
        conn.execute("DROP SCHEMA app CASCADE")
        conn.execute("REVOKE CREATE ON DATABASE postgres FROM app_writer")
        conn.execute("DROP ROLE app_writer")


def _suffix(conn: Any) -> str:
    """The outbox table's name suffix (the table only: its id sequence and primary-key index
    share the prefix, and ``count(*)`` of a sequence is 1)."""
    row = conn.execute(
        "SELECT relname FROM pg_class WHERE relname LIKE 'vectorport_outbox_%%' "
        "AND relnamespace = 'app'::regnamespace AND relkind = 'r'"
    ).fetchone()
    return str(row[0]).removeprefix("vectorport_outbox_")


@pytest.mark.pgvector
@pytest.mark.parametrize("method", ["slot", "outbox"])
def test_langchain_shared_table_captures_one_collection(
    url_for: Callable[..., str], tmp_path: Path, pg_dir: Path, method: str
) -> None:
    """LangChain's ``langchain_pg_embedding`` holds every collection: writes to another
    collection never reach the target, a row moved out of the collection is deleted there."""
    import uuid

    schema = f"lc_{method}"
    ids = {"docs": uuid.uuid4(), "other": uuid.uuid4()}

    def put(conn: Any, key: str, coll: str, i: int) -> None:
        vec = "[" + ",".join(str(x) for x in _record(i, 1).vector.tolist()) + "]"
        conn.execute(
            f"INSERT INTO {schema}.langchain_pg_embedding VALUES (%s, %s, %s::vector, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET collection_id = excluded.collection_id, "
            "embedding = excluded.embedding, document = excluded.document, cmetadata = excluded.cmetadata",
            (key, ids[coll], vec, f"{coll} {i}", json.dumps({"i": i})),
        )

    with _admin(pg_dir) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"CREATE TABLE {schema}.langchain_pg_collection (uuid uuid PRIMARY KEY, "
            "name varchar NOT NULL UNIQUE, cmetadata json)"
        )
        conn.execute(
            f"CREATE TABLE {schema}.langchain_pg_embedding (id varchar PRIMARY KEY, collection_id uuid "
            f"REFERENCES {schema}.langchain_pg_collection (uuid) ON DELETE CASCADE, embedding vector, "
            "document varchar, cmetadata jsonb)"
        )
        for coll, cid in ids.items():
            conn.execute(f"INSERT INTO {schema}.langchain_pg_collection VALUES (%s, %s, NULL)", (cid, coll))
        for i in range(20):
            put(conn, f"k{i}", "docs" if i % 2 else "other", i)
    base = url_for("pgvector").split("?")[0]
    source = f"{base}?table=docs&layout=langchain&schema={schema}"
    target = url_for("pgvector")
    _baseline(pg_dir, f"{schema}.langchain_pg_embedding")
    assert _on(source, "setup_capture", method).method == method
    assert sync(source, target, state=tmp_path / "s.sqlite", delete=True).sync.new == 10
    with _admin(pg_dir) as conn:
        for i in range(20, 30):
            put(conn, f"k{i}", "other", i)  # another collection: nothing to write
        put(conn, "k31", "docs", 31)
        put(conn, "k1", "other", 1)  # moved out of docs
        conn.execute(f"DELETE FROM {schema}.langchain_pg_embedding WHERE id = 'k3'")
        conn.execute(f"UPDATE {schema}.langchain_pg_embedding SET cmetadata = '{{\"i\": 0}}' WHERE id = 'k5'")
    report = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert report.sync.mode == "capture"
    assert (report.sync.new, report.sync.changed, report.sync.deleted) == (1, 1, 2)
    check = vectorport.verify(source, target, sample_queries=2)
    assert check.data_equal, check.to_dict()
    assert _on(target, "count") == 9
    assert _on(source, "teardown_capture")
    assert _leftovers(pg_dir, f"{schema}.langchain_pg_embedding") == []
    _on(target, "drop")
    with _admin(pg_dir) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.pgvector
def test_interleaved_transactions_are_applied_once_committed(
    source: str, url_for: Callable[..., str], tmp_path: Path, pg_dir: Path
) -> None:
    """A transaction that wrote before another one committed, and commits after a pass applied
    that other one, is applied by the next pass (its rows precede the recorded position in the
    WAL, its commit does not)."""
    target = url_for("pgvector")
    table = source.split("table=")[1]
    vec = "[" + ",".join(["0.5"] * DIM) + "]"
    insert = f"INSERT INTO {table} (key, embedding, metadata) VALUES (%s, %s, '{{}}')"
    _on(source, "setup_capture", "slot")
    sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    with _admin(pg_dir) as early, _admin(pg_dir) as late:
        early.execute("BEGIN")
        early.execute(insert, ("early", vec))
        late.execute(insert, ("late", vec))
        assert sync(source, target, state=tmp_path / "s.sqlite", delete=True).sync.new == 1
        early.execute("COMMIT")
    report = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
    assert (report.sync.mode, report.sync.new) == ("capture", 1)
    assert {r.key for r in _on(target, "get", ["early", "late"])} == {"early", "late"}
    _on(target, "drop")


def _equal(source: str, target: str) -> bool:
    try:
        return vectorport.verify(source, target, sample_queries=0).data_equal
    except vectorport.exceptions.ConfigurationError:  # the follower's first pass did not create it yet
        return False


def _until_equal(source: str, target: str, seconds: float = 40.0) -> None:
    deadline = time.monotonic() + seconds
    while not _equal(source, target):
        assert time.monotonic() < deadline, "the follower did not catch up"
        time.sleep(0.5)


def _stored_position(state: Path) -> str:
    import sqlite3

    db = sqlite3.connect(state)
    try:
        row = db.execute("SELECT value FROM meta WHERE name = 'capture'").fetchone()
    finally:
        db.close()
    return str(json.loads(row[0])["position"])


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_follow_outlives_a_dropped_connection_and_a_restart_and_stops_on_a_dropped_table(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    """A server of its own (restarted by the test): ``pg_terminate_backend`` of the follower's
    sessions and a restart of the server are retried on stderr and the follower goes on from
    its position; dropping the table stops it with one error line, the position kept."""
    import tempfile

    from vectorport.backends.pgvector._embedded import local_server, stop_embedded

    root = Path(tempfile.mkdtemp(prefix="vectorport-follow-outage-"))
    root.chmod(0o755)
    err_path = tmp_path / "err.txt"
    try:
        with local_server(root) as data, err_path.open("w") as err:
            source, target = f"pgvector://{data}?table=chunks&index=exact", url_for("s3vectors")
            store = vectorport.connect(source, dimension=DIM)
            store.upsert([_record(i, 0) for i in range(60)])
            store.setup_capture("slot")
            store.close()
            state = tmp_path / "s.sqlite"
            proc = subprocess.Popen(
                _follow_cmd(source, target, state), stdout=subprocess.DEVNULL, stderr=err, env=_env()
            )
            try:
                _writes(source, 30, seed=21)
                _until_equal(source, target)
                with _admin(data) as conn:  # every session but this one: the follower's and the store's
                    ended = conn.execute(
                        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
                    ).fetchone()[0]
                assert ended >= 1
                _writes(source, 30, seed=22, start=100)
                _until_equal(source, target)
                assert proc.poll() is None
                assert stop_embedded(data)  # the next connection starts it again
                _writes(source, 30, seed=23, start=200)
                _until_equal(source, target)
                assert proc.poll() is None
                with _admin(data) as conn:
                    conn.execute("DROP TABLE chunks")
                assert proc.wait(timeout=40) != 0
            finally:
                proc.kill()
                proc.wait()
            lines = err_path.read_text().splitlines()
            retries = [line for line in lines if "follow:" in line and "retry" in line]
            assert retries, lines
            assert any("answers again" in line for line in lines), lines
            assert "the source table was dropped; the sync position is kept" in lines[-1], lines
            from vectorport.backends.pgvector._pgoutput import lsn_int

            assert lsn_int(_stored_position(state)) == _confirmed(data)
        _on(target, "drop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _settled(state: Path, data: Path, seconds: float = 20.0) -> str:
    """The follower's stored position once the slot is confirmed up to it (a batch between its
    state commit and its confirmation is not a position to judge by)."""
    from vectorport.backends.pgvector._pgoutput import lsn_int

    deadline = time.monotonic() + seconds
    while lsn_int(position := _stored_position(state)) != _confirmed(data):
        assert time.monotonic() < deadline, "the follower did not confirm its position"
        time.sleep(0.2)
    return position


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_follow_gives_up_after_max_outage_with_its_position_kept(
    url_for: Callable[..., str], tmp_path: Path
) -> None:
    """A source reached by a plain DSN (nothing starts it again) that stops and stays down:
    ``--follow --max-outage 3`` retries, then ends with one error line and exit 3, its stored
    position and the slot's where they were."""
    import tempfile

    from vectorport._exit import ExitCode
    from vectorport.backends.pgvector._embedded import embedded_conninfo, local_server, stop_embedded
    from vectorport.backends.pgvector._pgoutput import lsn_int

    root = Path(tempfile.mkdtemp(prefix="vectorport-follow-gone-"))
    root.chmod(0o755)
    err_path = tmp_path / "err.txt"
    try:
        with local_server(root) as data, err_path.open("w") as err:
            dsn = embedded_conninfo(data)
            source = f"{dsn}{'&' if '?' in dsn else '?'}table=chunks&index=exact"
            target = url_for("s3vectors")
            store = vectorport.connect(source, dimension=DIM)
            store.upsert([_record(i, 0) for i in range(60)])
            store.setup_capture("slot")
            store.close()
            state = tmp_path / "s.sqlite"
            cmd = _follow_cmd(source, target, state, "--max-outage", "3")
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=_env())
            try:
                _writes(source, 20, seed=31)
                _until_equal(source, target)
                kept = _settled(state, data)
                began = time.monotonic()  # the outage cannot begin before the server stops
                assert stop_embedded(data)
                code = proc.wait(timeout=60)
            finally:
                proc.kill()
                proc.wait()
            assert code == ExitCode.FAILURE
            assert time.monotonic() - began >= 2.5  # it retried for about --max-outage seconds
            lines = err_path.read_text().splitlines()
            assert any("follow:" in line and "retry" in line for line in lines), lines
            last = lines[-1]
            assert "gave up after an outage" in last and "--max-outage 3" in last, lines
            assert f"the sync position {kept} is kept" in last, lines
            assert "Traceback" not in err_path.read_text()
            assert _stored_position(state) == kept
            assert lsn_int(kept) == _confirmed(data)  # starts the server again to look
            _assert_equal(source, target)
        _on(target, "drop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.pgvector
def test_a_scan_pass_trims_the_outbox_rows_its_scan_covered(tmp_path: Path) -> None:
    """A server of its own (another test's open transaction holds back what may be trimmed):
    the first, full, pass of an outbox-captured source trims the rows committed before it
    began, so the next pass reads nothing; a row written by a transaction still running at
    the mark stays, even when it commits before the trim with an id below the mark's."""
    import tempfile

    import psycopg

    from vectorport.backends.pgvector._embedded import embedded_conninfo, local_server

    root = Path(tempfile.mkdtemp(prefix="vectorport-outbox-trim-"))
    root.chmod(0o755)
    try:
        with local_server(root) as data:
            source, target = (f"pgvector://{data}?table={t}&index=exact" for t in ("chunks", "copy"))
            store = vectorport.connect(source, dimension=DIM)
            store.upsert([_record(i, 0) for i in range(60)])
            assert store.setup_capture("outbox").method == "outbox"
            _writes(source, 30, seed=41)  # before the first pass: all in the outbox
            feed = store.change_feed()
            assert feed is not None and feed.kind == "outbox"
            outbox = feed.name.split("@")[0]  # the table's name, @ its oid
            first = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
            assert first.sync.mode == "full"
            with _admin(data) as conn:
                assert conn.execute(f"SELECT count(*) FROM {outbox}").fetchone()[0] == 0
            second = sync(source, target, state=tmp_path / "s.sqlite", delete=True)
            assert second.sync.mode == "capture" and second.sync.source_read == 0
            # a row drawn below the mark by a transaction running when the mark was taken
            _writes(source, 5, seed=42, start=50)
            with psycopg.connect(embedded_conninfo(data)) as held:
                held.execute(
                    "INSERT INTO chunks (key, embedding, metadata) VALUES ('held#c', %s, '{}')",
                    ("[" + ",".join(["0.25"] * DIM) + "]",),
                )
                held_id = held.execute(f"SELECT max(id) FROM {outbox}").fetchone()[0]
                _writes(source, 5, seed=43, start=60)  # committed after it: higher ids
                at = feed.position()
                held.commit()
            assert int(at.split(":")[0]) > held_id
            feed.confirm(feed.covered(at))
            with _admin(data) as conn:
                left = [r[0] for r in conn.execute(f"SELECT id FROM {outbox} ORDER BY id")]
            assert held_id in left  # committed after the mark: its change may be unseen
            assert min(left) == held_id  # everything committed before the transaction began is trimmed
            feed.close()
            store.close()
            # (the trim above had no scan behind it: a full pass brings the target up, and trims)
            third = sync(source, target, state=tmp_path / "s.sqlite", delete=True, full=True)
            assert third.sync.mode == "full"
            with _admin(data) as conn:
                assert conn.execute(f"SELECT count(*) FROM {outbox}").fetchone()[0] == 0
            _assert_equal(source, target)
            _on(source, "teardown_capture")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.pgvector
def test_follow_without_capture_names_the_store_method_in_python_and_the_flag_on_the_command_line(
    source: str, tmp_path: Path
) -> None:
    """A source that can capture but has none installed: Python names ``setup_capture()``, the
    command line ``sync --setup-capture`` with the source."""
    from typer.testing import CliRunner

    from vectorport.cli import app
    from vectorport.exceptions import ConfigurationError

    target = "memory://capture-advice-dst"
    with pytest.raises(ConfigurationError) as refused:
        sync(source, target, state=tmp_path / "s.sqlite", follow=True)
    python = str(refused.value)
    assert python.endswith(
        "so follow=True has nothing to read: install it first with the source store's setup_capture()"
    ), python
    label = python.split(" has no change capture installed")[0]
    out = CliRunner().invoke(app, ["sync", source, target, "--state", str(tmp_path / "c.sqlite"), "--follow"])
    assert out.exit_code == 2, out.output
    said = " ".join(out.stderr.split())
    assert said.endswith(
        f"{label} has no change capture installed, so --follow has nothing to read: "
        f"run vectorport sync --setup-capture {label} first"
    ), said
    with contextlib.suppress(vectorport.NotFoundError):
        _on(target, "drop")


@pytest.mark.pgvector
@pytest.mark.parametrize("method", ["slot", "outbox"])
def test_a_table_dropped_between_the_feeds_check_and_its_read_is_said_dropped(
    url_for: Callable[..., str], pg_dir: Path, method: str
) -> None:
    """A drop can land between the feed's check of the table and the next statement naming it
    (seen once in a CI run of ``sync --follow``): the feed says the source table was dropped, the
    position kept, not that a collection should be created."""
    from psycopg import sql

    from vectorport import ConfigurationError

    url = url_for("pgvector")
    store = vectorport.connect(url, dimension=DIM)
    try:
        store.upsert([_record(i, 0) for i in range(10)])
        assert store.setup_capture(method).method == method
        feed = store.change_feed()
        assert feed is not None
        qualified = store.layout.qualified
        with _admin(pg_dir) as conn:
            conn.execute(sql.SQL("DROP TABLE {} CASCADE").format(qualified))
        dropped = "the source table was dropped; the sync position is kept"
        # a statement after the check, as the feed's reads run them
        with pytest.raises(ConfigurationError, match=dropped), feed._session() as conn:
            conn.execute(sql.SQL("SELECT 1 FROM {}").format(qualified))
        with pytest.raises(ConfigurationError, match="the source table was dropped"):
            feed.read(10)
        feed.close()
    finally:
        store.close()
        again = vectorport.connect(url, dimension=DIM)  # the table back, to remove the capture
        again.teardown_capture()
        again.drop()


@pytest.mark.pgvector
def test_a_table_dropped_before_a_pass_reads_its_changed_records_is_said_dropped(
    url_for: Callable[..., str], pg_dir: Path, tmp_path: Path
) -> None:
    """The feed read a batch (the table was there), then the table went before the pass read the
    changed records back: the pass says the table was dropped, and the state keeps its position."""
    from psycopg import sql

    from vectorport import ConfigurationError
    from vectorport.engine._transform import Transformer
    from vectorport.sync._capture import CaptureRun
    from vectorport.sync._report import SyncStats
    from vectorport.sync._state import SyncState

    url = url_for("pgvector")
    store = vectorport.connect(url, dimension=DIM)
    target = vectorport.connect("memory://capture-dropped-read-back", dimension=DIM)
    try:
        store.upsert([_record(i, 0) for i in range(10)])
        assert store.setup_capture("slot").method == "slot"
        store.upsert([_record(i, 1) for i in range(3)])
        feed = store.change_feed()
        assert feed is not None
        batch = feed.read(100)
        assert batch.keys
        state = SyncState(tmp_path / "s.sqlite", {"test": "dropped"})
        run = CaptureRun(
            store,
            target,
            state,
            Transformer(target.capabilities.metadata),
            SyncStats(),
            feed,
            delete=True,
            batch_size=100,
            retry=None,
        )
        with _admin(pg_dir) as conn:
            conn.execute(sql.SQL("DROP TABLE {} CASCADE").format(store.layout.qualified))
        with pytest.raises(
            ConfigurationError, match="the source table was dropped; the sync position is kept"
        ):
            run.apply(batch)
        assert run.position is None and target.count() == 0  # nothing applied, nothing confirmed
        feed.close()
        state.close()
    finally:
        target.drop()
        store.close()
        again = vectorport.connect(url, dimension=DIM)
        again.teardown_capture()
        again.drop()
