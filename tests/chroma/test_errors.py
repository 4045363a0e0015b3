"""Errors a Chroma user meets, and what the messages tell them to do."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import vectorport
from vectorport import Record
from vectorport.exceptions import BackendUnavailableError, NotFoundError, ValidationError

from ..conftest import _chroma_binary, free_port

pytestmark = pytest.mark.chroma


def test_refused_connection_says_to_start_a_server() -> None:
    port = free_port()
    with pytest.raises(BackendUnavailableError, match=r"cannot connect .*chroma run --path DIR --port"):
        vectorport.connect(f"chroma+http://127.0.0.1:{port}?collection=docs")


@pytest.fixture
def other_http_server() -> Iterator[int]:
    """A plain HTTP server that is not Chroma (every path is a 404)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_server_that_is_not_chroma_is_named_as_such(other_http_server: int) -> None:
    with pytest.raises(
        BackendUnavailableError, match=r"answered HTTP 404, not like a Chroma 1\.x server"
    ) as info:
        vectorport.connect(f"chroma+http://127.0.0.1:{other_http_server}?collection=docs")
    assert "<html" not in str(info.value).lower()


def test_missing_tenant_points_at_the_url_parameters(chroma_server: str) -> None:
    with pytest.raises(NotFoundError, match=r"nope.*check the tenant= and database="):
        vectorport.connect(f"chroma+http://{chroma_server}?collection=docs&tenant=nope")


def test_missing_collection_read_only(new_url: Callable[[], str]) -> None:
    url = new_url()
    with pytest.raises(NotFoundError, match=r"pass dimension= \(and metric=\) to create"):
        vectorport.connect(url)


def test_wrong_dimension_on_upsert_and_query(new_url: Callable[[], str]) -> None:
    store = vectorport.connect(new_url(), dimension=3)
    try:
        with pytest.raises(
            ValidationError, match="the vector has 2 dimensions; the collection has 3"
        ) as info:
            store.upsert([Record("ok", [1, 2, 3]), Record("short", [1, 2])])
        assert info.value.key == "short" and info.value.path == "vector"
        assert store.count() == 0, "nothing of the batch is written"
        with pytest.raises(ValidationError, match="the collection has 3"):
            store.query([1, 2, 3, 4])
    finally:
        store.drop()
        store.close()


def _start_server(path: Any) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [_chroma_binary(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("chroma run did not start") from None
            time.sleep(0.2)


def test_server_gone_mid_session_fails_fast_and_clearly(tmp_path: Any) -> None:
    proc, port = _start_server(tmp_path / "db")
    try:
        store = vectorport.connect(f"chroma+http://127.0.0.1:{port}?collection=docs", dimension=2)
        store.upsert([Record("a", [1, 0])])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    try:
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError, match=r"docs.*query: cannot connect"):
            store.query([1, 0])
        assert time.monotonic() - started < 5, "a refused connection is not retried with backoff"
    finally:
        store.close()


def test_a_read_racing_compaction_is_retried_not_fatal() -> None:
    # the exact text the embedded server raised for a scan under live writes
    # (tests/migrate/test_sync_live.py, chroma-to-s3vectors)
    from chromadb.errors import InternalError

    from vectorport.backends.chroma.errors import map_errors
    from vectorport.exceptions import TransientError

    with (
        pytest.raises(TransientError, match=r"Error finding id.*retrying"),
        map_errors("chroma collection 'c' at chroma:///x: scan"),
    ):
        raise InternalError("Error executing plan: Internal error: Error finding id")


def test_a_read_before_the_first_flush_is_retried_not_fatal() -> None:
    # the exact text `chroma run` 1.5.9 returned to a get on a collection two Ray sync shards
    # were writing (tests/ray/test_ray_sync.py, in a CI run)
    from chromadb.errors import InternalError

    from vectorport.backends.chroma.errors import map_errors
    from vectorport.exceptions import TransientError

    with (
        pytest.raises(TransientError, match=r"Nothing found on disk.*retrying"),
        map_errors("chroma collection 'c' at chroma+http://127.0.0.1:8000?collection=c: get"),
    ):
        raise InternalError(
            "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"
        )


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_kept_alive_connection_closed_by_the_server_is_retried(wrapped: bool) -> None:
    # the exact error httpx raised in CI for a count on a `chroma run` connection the server
    # had closed after a pause (tests/chroma/test_limits.py); HttpClient may wrap it in a ValueError
    import httpx

    from vectorport.backends.chroma.errors import map_errors
    from vectorport.exceptions import TransientError

    closed = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    with (
        pytest.raises(TransientError, match=r"count: cannot connect \(RemoteProtocolError"),
        map_errors("chroma collection 'c' at chroma+http://127.0.0.1:8000?collection=c: count"),
    ):
        if not wrapped:
            raise closed
        try:
            raise closed
        except httpx.RemoteProtocolError as exc:
            raise ValueError("Could not connect to a Chroma server") from exc


def test_an_index_chroma_left_truncated_is_named_with_what_to_do(tmp_path: Any) -> None:
    # What a SIGKILL while Chroma saves its HNSW index leaves (seen with chroma run 1.5.9 in
    # tests/chroma/test_crash.py): index_metadata.pickle truncated. 1,200 records pass Chroma's
    # default sync threshold (1,000), so the index is on disk; the reopen is the CLI in a new
    # process, as after a crash: one line that says what to do, no traceback.
    url = f"chroma://{tmp_path}?collection=docs"
    store = vectorport.connect(url, dimension=2)
    store.upsert([Record(f"k{i}", [1.0, float(i)]) for i in range(1200)])
    store.close()
    (pickle,) = tmp_path.glob("*/index_metadata.pickle")
    pickle.write_bytes(b"")
    cli = [sys.executable, "-m", "vectorport", "info", url]
    out = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and not out.stdout
    assert "Traceback" not in out.stderr
    assert "chroma collection 'docs'" in out.stderr
    assert "Chroma cannot read this collection's on-disk HNSW index" in out.stderr
    assert "restore the collection from a vectorport snapshot" in out.stderr
