"""The bucket server answers hostile requests as AWS would, with a 400 ``ValidationException``, and
keeps its log readable: a deeply nested body or filter is refused (not a 500 from a
``RecursionError``), and a client that drops its connection leaves no traceback behind."""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.request
from typing import Any

import pytest

pytestmark = pytest.mark.s3vectors


def _post(endpoint: str, path: str, body: bytes) -> tuple[int, dict[str, Any], str]:
    request = urllib.request.Request(
        endpoint + path, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"{}"), resp.headers.get("x-amzn-ErrorType", "")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}"), err.headers.get("x-amzn-ErrorType", "")


@pytest.mark.parametrize("depth", [100, 200_000])
def test_deeply_nested_body_is_a_validation_error(endpoint: str, depth: int) -> None:
    body = b'{"vectorBucketName": "b", "x": ' + b"[" * depth + b"]" * depth + b"}"
    status, _, code = _post(endpoint, "/CreateVectorBucket", body)
    assert (status, code) == (400, "ValidationException")


@pytest.mark.parametrize("levels", [40, 3_000])
def test_deeply_nested_filter_is_a_validation_error(
    endpoint: str, s3v: Any, unique: Any, levels: int
) -> None:
    bucket, index = unique("deep"), "idx"
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName=index, dataType="float32", dimension=2, distanceMetric="cosine"
    )
    s3v.put_vectors(
        vectorBucketName=bucket, indexName=index, vectors=[{"key": "a", "data": {"float32": [1.0, 0.0]}}]
    )
    # written by hand: botocore (and json.dumps) would recurse as deep as the filter
    flt = '{"$and": [' * levels + '{"n": 1}' + ', {"n": 1}]}' * levels
    body = (
        f'{{"vectorBucketName": "{bucket}", "indexName": "{index}", "topK": 1, '
        f'"queryVector": {{"float32": [1.0, 0.0]}}, "filter": {flt}}}'
    )
    status, doc, code = _post(endpoint, "/QueryVectors", body.encode())
    assert (status, code) == (400, "ValidationException"), doc
    assert "nests deeper" in json.dumps(doc)
    s3v.delete_index(vectorBucketName=bucket, indexName=index)
    s3v.delete_vector_bucket(vectorBucketName=bucket)


def test_dropped_connections_leave_no_traceback(
    endpoint: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, port = endpoint.removeprefix("http://").rsplit(":", 1)
    # a CLI test earlier in the session may have left a handler on a stream it closed
    monkeypatch.setattr(logging.getLogger("vectorport"), "handlers", [])
    caplog.set_level(logging.DEBUG, logger="vectorport.bucketserver")
    for announced in (100_000, 10):
        with socket.create_connection((host, int(port))) as sock:
            head = f"POST /ListVectorBuckets HTTP/1.1\r\nHost: x\r\nContent-Length: {announced}\r\n\r\n"
            sock.sendall(head.encode() + b"{")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        # SO_LINGER 0: the close is a reset, as a killed client's
    time.sleep(0.5)
    _, err = capfd.readouterr()
    assert "Traceback" not in err
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], caplog.records
    # and the server still answers
    status, _, _ = _post(endpoint, "/ListVectorBuckets", b"{}")
    assert status == 200


def test_depth_limit_counts_every_value() -> None:
    from vectorport.bucketserver._errors import ValidationException
    from vectorport.bucketserver._http import MAX_DEPTH, check_depth

    def nest(levels: int, leaf: Any) -> Any:  # levels of containers, alternating list/object
        doc = leaf
        for i in range(levels):
            doc = [doc] if i % 2 else {"k": doc}
        return doc

    for leaf in (1.0, "s", [], {}):
        check_depth(nest(MAX_DEPTH - 1, leaf))  # the leaf sits at MAX_DEPTH
        with pytest.raises(ValidationException, match="nests deeper"):
            check_depth(nest(MAX_DEPTH, leaf))  # one level deeper
    check_depth({"vectors": [{"data": {"float32": [0.5] * 384}}] * 3})
