"""The fast paths: the adapter's pre-encoded PutVectors body and the server's vectorised
vector checks must store exactly what the slow paths stored and fail exactly as they did."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.backends.s3vectors import S3VectorsStore
from vectorport.backends.s3vectors._wire import EncodedVectors, encode_put_body, float_rows

pytestmark = pytest.mark.s3vectors

F32 = np.finfo(np.float32)
SPECIAL = [
    0.1,
    -0.0,
    1e-30,
    float(F32.max),
    -float(F32.max),
    float(F32.tiny),  # smallest normal
    float(F32.smallest_subnormal),
    3.0,
    123456792.0,  # nine integer digits
    1e20,
    -2.5e-8,
    16777217.0,  # not a float32: rounds to 16777216
]


# What a store accepts: a vector whose float32 length overflows (F32.max, 1e20) is refused by
# validation (distances to it are not finite); the encoder tests above keep those values.
STORABLE = [x if abs(x) < 1e18 else float(np.copysign(3.0e18, x)) for x in SPECIAL]


def _bits(values: Any) -> list[int]:
    return np.asarray(values, np.float32).view(np.uint32).tolist()  # type: ignore[no-any-return]


@pytest.fixture
def store(endpoint: str, unique: Any) -> Iterator[S3VectorsStore]:
    s = vectorport.connect(
        f"s3vectors://wire/{unique('ix')}?endpoint_url={endpoint}&write_rate=0",
        dimension=len(SPECIAL),
        metric="euclidean",
    )
    assert isinstance(s, S3VectorsStore)
    yield s
    s.drop()
    s.close()


def test_float_rows_round_trip_every_float32() -> None:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, size=(200, 64), dtype=np.uint64).astype(np.uint32)
    vectors = bits.view(np.float32).copy()
    vectors[~np.isfinite(vectors)] = 1.0
    vectors[0, :12] = np.asarray(SPECIAL, np.float32)
    back = np.asarray([json.loads(row) for row in float_rows(vectors)], np.float64).astype(np.float32)
    assert np.array_equal(back.view(np.uint32), vectors.view(np.uint32))  # -0.0 included


# The one float32 (with its negative) whose shortest decimal reads back, through a float64, as
# its neighbour: 7.038531e-26 is within half a float64 ulp of the midpoint between the two.
DOUBLE_ROUNDED = 7.038530691851209e-26


def _read_as_float64(rows: list[str]) -> Any:
    return np.asarray([json.loads(row) for row in rows], np.float64).astype(np.float32)


def test_float_rows_round_trip_the_double_rounded_float32() -> None:
    vectors = np.asarray([[DOUBLE_ROUNDED, 0.5], [0.5, -DOUBLE_ROUNDED], [0.5, 0.25]], np.float32)
    shortest = json.loads("[" + str(np.float32(DOUBLE_ROUNDED)) + "]")
    assert _bits(np.float64(shortest[0])) != _bits(vectors[0, 0])  # the trap is real
    rows = float_rows(vectors)
    assert _bits(_read_as_float64(rows)) == _bits(vectors)
    assert rows[2] == "[0.5,0.25]"  # rows without such a number keep the shortest decimals


def test_float_rows_doubt_every_row_a_float64_reader_would_misread() -> None:
    from vectorport.backends.s3vectors._wire import _may_misread

    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**32, size=(200_000, 1), dtype=np.uint64).astype(np.uint32)
    vectors = bits.view(np.float32).copy()
    vectors[~np.isfinite(vectors)] = 1.0
    vectors[:4, 0] = [DOUBLE_ROUNDED, -DOUBLE_ROUNDED, F32.max, -F32.max]
    shortest = np.asarray(json.loads("[" + ",".join(str(x) for x in vectors[:, 0]) + "]"), np.float64)
    with np.errstate(over="ignore"):
        misread = (shortest.astype(np.float32).view(np.uint32) != vectors[:, 0].view(np.uint32)) | (
            np.abs(shortest) > float(F32.max)
        )
    doubted = _may_misread(vectors)
    assert misread[:4].all() and not (misread & ~doubted).any()
    assert doubted.mean() < 0.05  # the doubt is rare: rows are not all read back


def test_encoded_body_is_the_request_botocore_would_send() -> None:
    vectors = np.asarray([SPECIAL, SPECIAL[::-1]], np.float32)
    metas: list[dict[str, Any] | None] = [{"lang": "fr", "é": [1, 2.5, True]}, None]
    body = encode_put_body({"vectorBucketName": "b", "indexName": "i"}, ["k1", "ключ"], vectors, metas)
    doc = json.loads(body)
    assert body.isascii()
    assert [v["key"] for v in doc["vectors"]] == ["k1", "ключ"]
    assert doc["vectors"][0]["metadata"] == metas[0] and "metadata" not in doc["vectors"][1]
    assert _bits([v["data"]["float32"] for v in doc["vectors"]]) == _bits(vectors)
    assert (doc["vectorBucketName"], doc["indexName"]) == ("b", "i")


def test_adapter_stores_exact_float32_bits(store: S3VectorsStore, s3v: Any) -> None:
    sent: list[bytes] = []
    store.client.meta.events.register(
        "before-send.s3vectors.PutVectors", lambda request, **_: sent.append(bytes(request.body))
    )
    store.upsert(
        [
            Record("special", STORABLE, {"n": 1}, "text"),
            Record("neg", [-x for x in STORABLE]),
            Record("plain", [0.1] * len(SPECIAL)),
        ]
    )
    # The pre-encoded body went out: shortest float32 numbers, not botocore's repr.
    assert len(sent) == 1 and b"[0.1,0.1," in sent[0]
    assert b"[0.10000000149011612,0.10000000149011612" not in sent[0]
    got = s3v.get_vectors(
        vectorBucketName="wire", indexName=store.index, keys=["special", "neg"], returnData=True
    )["vectors"]
    by_key = {v["key"]: v["data"]["float32"] for v in got}
    assert _bits(by_key["special"]) == _bits(STORABLE)
    assert _bits(by_key["neg"]) == _bits([-x for x in STORABLE])
    (rec,) = store.get(["special"])
    assert rec.metadata == {"n": 1} and rec.text == "text"


def test_encoded_vectors_on_a_plain_client_send_every_item(
    endpoint: str, unique: Any, make_client: Any
) -> None:
    client = make_client(endpoint)  # no vectorport handlers installed
    name = unique("plain")
    client.create_vector_bucket(vectorBucketName=name)
    client.create_index(
        vectorBucketName=name, indexName="ix1", dataType="float32", dimension=2, distanceMetric="cosine"
    )
    items = [{"key": f"k{i}", "data": {"float32": [1.0, float(i)]}} for i in range(3)]
    client.put_vectors(vectorBucketName=name, indexName="ix1", vectors=EncodedVectors(items, b"{}"))
    keys = {v["key"] for v in client.list_vectors(vectorBucketName=name, indexName="ix1")["vectors"]}
    assert keys == {"k0", "k1", "k2"}
    client.delete_index(vectorBucketName=name, indexName="ix1")
    client.delete_vector_bucket(vectorBucketName=name)


@pytest.mark.parametrize(
    ("vector", "expected"),
    [
        ([3, 1.5], [3.0, 1.5]),  # JSON integers are numbers too
        ([2**60 + 1, 1.0], [float(np.float32(2**60 + 1)), 1.0]),  # beyond 2**53: the per-value path
        ([16777217, 0.5], [16777216.0, 0.5]),
    ],
)
def test_server_accepts_integers_like_before(
    raw_s3v: Any, index: dict[str, str], vector: list[Any], expected: list[float]
) -> None:
    raw_s3v.put_vectors(**index, vectors=[{"key": "i", "data": {"float32": vector}}])
    got = raw_s3v.get_vectors(**index, keys=["i"], returnData=True)["vectors"][0]["data"]["float32"]
    assert got == expected


@pytest.mark.parametrize(
    ("vector", "fragment"),
    [
        ("[true, 1.0]", "Member must be a number"),
        ("[1e400, 1.0]", "valid float32 values, got inf"),
        ("[1" + "0" * 400 + ", 1.0]", "valid float32 values, got 1000000"),  # was a 500 before
        ("[1.0, -1e39]", "valid float32 values, got -1e+39"),
        ("[1.0, 3.40282347e+38]", "valid float32 values, got 3.40282347e+38"),
        ("[1.0, null]", "Member must not be null"),
        ('["1.0", 1.0]', "Member must be a number"),
    ],
)
def test_server_rejects_bad_numbers_like_before(
    endpoint: str, index: dict[str, str], vector: str, fragment: str
) -> None:
    # Raw HTTP: botocore's serializer cannot even send most of these.
    item = '{"key":"bad","data":{"float32":' + vector + "}}"
    body = (json.dumps(index)[:-1] + ',"vectors":[' + item + "]}").encode()
    request = urllib.request.Request(endpoint + "/PutVectors", body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(request, timeout=10)
    doc = json.loads(exc.value.read())
    assert exc.value.code == 400 and exc.value.headers["x-amzn-ErrorType"] == "ValidationException"
    assert fragment in doc["message"], doc


@pytest.fixture
def index(s3v: Any, unique: Any) -> Iterator[dict[str, str]]:
    name = unique("wirenum")
    s3v.create_vector_bucket(vectorBucketName=name)
    s3v.create_index(
        vectorBucketName=name, indexName="ix1", dataType="float32", dimension=2, distanceMetric="euclidean"
    )
    yield {"vectorBucketName": name, "indexName": "ix1"}
    s3v.delete_index(vectorBucketName=name, indexName="ix1")
    s3v.delete_vector_bucket(vectorBucketName=name)


def test_fast_reads_parse_what_botocore_parses(
    store: S3VectorsStore, s3v: Any, make_client: Any, endpoint: str
) -> None:
    """ListVectors, GetVectors and QueryVectors through the adapter's client (vectors decoded by
    ``json.loads``) give exactly botocore's own parse of the same responses, paging included."""
    from vectorport.backends.s3vectors._wire import install

    fast = make_client(endpoint)
    assert install(fast)
    taken: list[str] = []  # registered after install's handlers: sees what they took over
    fast.meta.events.register(
        "before-parse.s3vectors",
        lambda operation_model, customized_response_dict, **_: (
            taken.append(operation_model.name) if "vectors" in customized_response_dict else None
        ),
    )
    rng = np.random.default_rng(7)
    rows = [
        Record(
            f"k{i:03d}", rng.standard_normal(len(SPECIAL)) * 10.0 ** (i % 7), {"i": i, "tags": ["a"]}, f"t{i}"
        )
        for i in range(40)
    ]
    rows += [
        Record("k000", STORABLE, {"n": 0.1, "list": ["x", "y"]}, "x"),
        Record("whole", [1.0] * len(SPECIAL)),
    ]
    store.upsert(rows)
    ids = {"vectorBucketName": "wire", "indexName": store.index}

    def same(op: str, **params: Any) -> dict[str, Any]:
        a = getattr(s3v, op)(**ids, **params)
        b = getattr(fast, op)(**ids, **params)
        a.pop("ResponseMetadata"), b.pop("ResponseMetadata")
        assert a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
        return b

    token = None
    pages = 0
    while True:
        page = same(
            "list_vectors",
            maxResults=7,
            returnData=True,
            returnMetadata=True,
            **({"nextToken": token} if token else {}),
        )
        pages += 1
        token = page.get("nextToken")
        if not token:
            break
    assert pages == 6
    got = same("get_vectors", keys=["k000", "whole", "absent"], returnData=True, returnMetadata=True)
    assert _bits(next(v for v in got["vectors"] if v["key"] == "k000")["data"]["float32"]) == _bits(STORABLE)
    q = same(
        "query_vectors", queryVector={"float32": STORABLE}, topK=5, returnDistance=True, returnMetadata=True
    )
    assert len(q["vectors"]) == 5 and "distance" in q["vectors"][0]
    assert taken == ["ListVectors"] * 6 + ["GetVectors", "QueryVectors"]
    # an error is still botocore's to parse
    with pytest.raises(fast.exceptions.NotFoundException):
        fast.get_vectors(vectorBucketName="wire", indexName="no-such-index", keys=["k"])


def test_batch_error_names_the_first_bad_record_and_writes_nothing(
    endpoint: str, raw_s3v: Any, index: dict[str, str]
) -> None:
    # The batch's vectors are checked together; a failure must still name the first bad
    # record (here a metadata error before a later bad vector) and store none of the batch.
    items = (
        '{"key":"ok","data":{"float32":[1.0,2.0]}},'
        '{"key":"meta","data":{"float32":[1.0,2.0]},"metadata":{"k":[[1]]}},'
        '{"key":"vec","data":{"float32":[1e400,2.0]}}'
    )
    body = (json.dumps(index)[:-1] + ',"vectors":[' + items + "]}").encode()
    request = urllib.request.Request(endpoint + "/PutVectors", body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(request, timeout=10)
    message = json.loads(exc.value.read())["message"]
    assert "'meta'" in message and "'vec'" not in message, message
    assert raw_s3v.get_vectors(**index, keys=["ok", "meta", "vec"])["vectors"] == []


def test_big_integers_in_metadata_stay_exact(endpoint: str, raw_s3v: Any, index: dict[str, str]) -> None:
    # Beyond 64 bits a fast JSON reader would turn these into floats; the server keeps them.
    meta = '{"low":-9223372036854775809,"high":18446744073709551616,"list":[1,123456789012345678901]}'
    item = '{"key":"big","data":{"float32":[1.0,2.0]},"metadata":' + meta + "}"
    body = (json.dumps(index)[:-1] + ',"vectors":[' + item + "]}").encode()
    urllib.request.urlopen(urllib.request.Request(endpoint + "/PutVectors", body, method="POST"), timeout=10)
    got = raw_s3v.get_vectors(**index, keys=["big"], returnMetadata=True)["vectors"][0]["metadata"]
    assert got == json.loads(meta)


@pytest.mark.parametrize(
    "text",
    [
        '{"v": [0.1, -0.0058760265819728374, 1e-7, 3, -0, 1E5], "s": "\\u00e9\\ud83d\\ude00"}',
        '{"v": [9223372036854775807, -9223372036854775808, 18446744073709551615]}',
        '{"v": [-9223372036854775809, 18446744073709551616, 1e400, 1.0e-400]}',
        '{"v": [-9223372036854775809, 18446744073709551616]}',
        '{"v": NaN, "w": -Infinity}',
        '{"s": "\\ud800", "a": 1, "a": 2}',
        '{"e": 1e-0000000000000000000001, "k": "12345678901234567890123"}',
    ],
)
def test_body_decoding_matches_json(text: str) -> None:
    from vectorport.bucketserver._http import decode_body

    want, got = json.loads(text), decode_body(text.encode())
    assert repr(got) == repr(want)  # repr: NaN != NaN, and int/float must not differ


@pytest.mark.parametrize(
    "text",
    [
        '{"vectors":[{"key":"k","data":{"float32":[0.1,-0.0058760265819728374,3,1E5]},"metadata":{"n":1}}]}',
        '{"vectors":[{"key":"k","metadata":{"big":18446744073709551616}}],"nextToken":"t"}',
        '{"vectors":[{"key":"k","metadata":{"l":[1,[-9223372036854775809]]}}]}',
        '{"vectors":[{"key":"k","distance":12345678901234567890123}]}',
        '{"vectors":[{"key":"k","data":{"float32":[1.0],"other":99999999999999999999}}]}',
        '{"vectors":[],"extra":{"x":[18446744073709551616]}}',
        '{"vectors":[{"key":"k","metadata":{"f":1e300,"i":18446744073709551615}}]}',
        '{"vectors":[{"key":"\\ud800"}]}',
        '{"vectors":[{"key":"k","data":{"float32":[NaN]}}]}',
        "[1, 18446744073709551616]",
    ],
)
def test_read_body_matches_json(text: str) -> None:
    from vectorport.backends.s3vectors._wire import read_body

    assert repr(read_body(text.encode())) == repr(json.loads(text))  # int and float must not differ


@pytest.mark.parametrize(
    "doc",
    [
        {"v": [0.1, -0.0, 1e-05, 1e16, 5e-324, 3.4028234663852886e38, 3, -0], "s": 'é😀\u2028\x00\x7f"\\'},
        {"vectors": [{"key": "k", "data": {"float32": [0.5, -2.25]}, "metadata": {"n": None, "l": []}}]},
        {"low": -9223372036854775809, "high": 18446744073709551616},
        {"d": float("inf"), "e": float("-inf")},
        {"s": "\ud800"},
        {1: "an integer key"},
        {"x": np.float32(1.5)},
    ],
)
def test_response_encoding_matches_json(doc: dict[Any, Any]) -> None:
    # The server's responses: the values json.dumps writes, or the error it raises.
    from vectorport._json import fast_dumps

    def slow(d: Any) -> bytes:
        return json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()

    try:
        want: Any = json.loads(slow(doc))
    except (TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            fast_dumps(doc)
        return
    got = fast_dumps(doc)
    assert repr(json.loads(got)) == repr(want)  # repr: NaN != NaN, and int/float must not differ


def test_float_rows_fall_back_to_nine_digits_where_a_float64_reader_would_differ() -> None:
    # The shortest float32 decimal of float32 max reads as a float64 beyond float32's range,
    # which the service refuses: that row (alone) is written with repr, like the slow path.
    from vectorport.backends.s3vectors._wire import _formatted_rows

    vectors = np.asarray([[0.1, float(F32.max)], [0.1, 2.5], [-0.0, -float(F32.max)]], np.float32)
    rows = float_rows(vectors)
    assert rows[1] == "[0.1,2.5]"
    assert rows[0] == _formatted_rows(vectors[:1])[0] and rows[2] == _formatted_rows(vectors[2:])[0]
    for row, want in zip(rows, vectors, strict=True):
        read = np.asarray(json.loads(row), np.float64)
        assert np.all(np.abs(read) <= float(F32.max))
        assert _bits(read) == _bits(want)


@pytest.mark.parametrize(
    "value",
    [
        {
            "source": "docs/a.md",
            "n": 12,
            "ok": True,
            "none": None,
            "tags": ["a", "b"],
            "t": 'é😀\x00\x1f"\\\u2028',
        },
        {
            "f": 1e-05,
            "g": [0.1, 1e16, -0.0, 5e-324, 1e-4, 123456789012345680.0, 0.5113],
            "h": {"x": 2.5e-308},
        },
        {"nan": float("nan"), "inf": [float("-inf")]},
        {"big": 18446744073709551616},
        {"s": "\ud800"},
        {1: "an integer key"},
        ("a", 1),
        "".join(chr(c) for c in range(0x800)),
    ],
)
def test_json_size_matches_json(value: Any) -> None:
    # The metadata byte counts behind the size limits: json's, or the error json raises.
    from vectorport._json import json_size

    try:
        want = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except ValueError as exc:
        with pytest.raises(type(exc)):
            json_size(value)
        return
    assert json_size(value) == want
