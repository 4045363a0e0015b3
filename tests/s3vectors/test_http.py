"""The local server's HTTP layer: latency per request, keep-alive, and request framing."""

from __future__ import annotations

import http.client
import json
import socket
import statistics
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.s3vectors


@pytest.fixture
def index(s3v: Any, unique: Any) -> dict[str, str]:
    bucket = unique("http")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName="idx", dataType="float32", dimension=2, distanceMetric="cosine"
    )
    ids = {"vectorBucketName": bucket, "indexName": "idx"}
    s3v.put_vectors(**ids, vectors=[{"key": "k", "data": {"float32": [1.0, 2.0]}}])
    return ids


def _connection(endpoint: str) -> http.client.HTTPConnection:
    parts = urlsplit(endpoint)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)


def test_small_requests_do_not_wait_for_delayed_acks(s3v: Any, index: dict[str, str]) -> None:
    # Headers and body sent in two writes made every response wait ~40 ms for the client's
    # delayed ACK (Nagle). A keep-alive round trip on loopback is ~1 ms.
    s3v.get_vectors(**index, keys=["k"])
    times = []
    for _ in range(25):
        start = time.perf_counter()
        s3v.get_vectors(**index, keys=["k"])
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.02, f"median {statistics.median(times) * 1000:.1f} ms"


def test_keep_alive_serves_many_requests_on_one_connection(endpoint: str, index: dict[str, str]) -> None:
    conn = _connection(endpoint)
    body = json.dumps({**index, "keys": ["k"], "returnData": True})
    socks = set()
    for _ in range(3):
        conn.request("POST", "/GetVectors", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        assert resp.status == 200 and int(resp.headers["Content-Length"]) == len(data)
        assert json.loads(data)["vectors"] == [{"key": "k", "data": {"float32": [1.0, 2.0]}}]
        assert resp.headers["x-amzn-RequestId"]
        socks.add(id(conn.sock))
    assert len(socks) == 1  # the same socket every time
    # An error answer keeps the connection usable too.
    conn.request("POST", "/GetVectors", json.dumps({**index, "keys": []}))
    resp = conn.getresponse()
    assert resp.status == 400 and json.loads(resp.read())["message"]
    conn.request("POST", "/GetIndex", json.dumps(index))
    assert conn.getresponse().status == 200
    conn.close()


def test_connection_close_is_honoured(endpoint: str, index: dict[str, str]) -> None:
    parts = urlsplit(endpoint)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=10) as sock:
        body = json.dumps(index).encode()
        sock.sendall(
            b"POST /GetIndex HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        chunks = []
        while chunk := sock.recv(65536):  # ends only if the server closes
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and json.loads(payload)["index"]["indexName"] == "idx"


def test_chunked_request_bodies_are_read(endpoint: str, index: dict[str, str]) -> None:
    conn = _connection(endpoint)
    body = json.dumps({**index, "keys": ["k"]}).encode()
    conn.request("POST", "/GetVectors", iter([body[:10], body[10:]]), encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["vectors"] == [{"key": "k"}]
    conn.request("POST", "/GetIndex", json.dumps(index))  # the connection is still in step
    assert conn.getresponse().status == 200
    conn.close()


def test_bad_content_length_is_a_validation_error(endpoint: str) -> None:
    conn = _connection(endpoint)
    conn.putrequest("POST", "/GetIndex")
    conn.putheader("Content-Length", "abc")
    conn.endheaders()
    resp = conn.getresponse()
    assert resp.status == 400 and resp.headers["x-amzn-ErrorType"] == "ValidationException"
    assert resp.headers["Connection"] == "close"
    conn.close()


def test_outputs_without_members_have_an_empty_body(endpoint: str, index: dict[str, str]) -> None:
    # API reference (PutVectors, DeleteVectors, DeleteIndex, ...): "the service sends back an
    # HTTP 200 response with an empty HTTP body".
    conn = _connection(endpoint)
    conn.request("POST", "/DeleteVectors", json.dumps({**index, "keys": ["nope"]}))
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read() == b"" and resp.headers["Content-Length"] == "0"
    conn.request("POST", "/GetVectors", json.dumps({**index, "keys": ["nope"]}))
    resp = conn.getresponse()
    assert json.loads(resp.read()) == {"vectors": []}  # outputs with members stay JSON
    conn.close()


def test_oversized_payload_is_answered_and_the_connection_kept() -> None:
    from vectorport.bucketserver import Limits, LocalServer

    from .conftest import boto_client

    server = LocalServer(limits=Limits(max_payload_bytes=2000))
    try:
        s3v = boto_client(server.start())
        s3v.create_vector_bucket(vectorBucketName="big-body")
        with pytest.raises(s3v.exceptions.ValidationException, match="limit is 2000"):
            s3v.create_vector_bucket(
                vectorBucketName="big-body-2", tags={f"k{i}": "v" * 200 for i in range(20)}
            )
        assert s3v.get_vector_bucket(vectorBucketName="big-body")["vectorBucket"]["vectorBucketName"]
    finally:
        server.stop()
