"""A fast PutVectors request body for a boto3 ``s3vectors`` client.

botocore validates and serializes ``float32`` vector data one Python call per number
(about 2 µs a float, most of a 500 x 384 batch's client time) and JSON-encodes each with
``repr`` (17 digits). The adapter has already validated the batch, so it encodes the body
itself — each number the shortest decimal that reads back as the same float32 (checked, see
:func:`float_rows`) — and swaps it into the request
through two botocore events:

* ``before-parameter-build``: the :class:`EncodedVectors` list is replaced by its first
  item only, so botocore validates and serializes one vector instead of 500;
* ``before-call``: the serialized body is replaced by the pre-encoded one, before signing.

Both handlers act only on an :class:`EncodedVectors` argument. A client that has not had
:func:`install` run (or any other use of the client) serializes the full list as usual.

Reading is the mirror image: botocore's response parser walks the vector data one Python call
per number too (about 0.8 µs a float: 30 s of a 100k x 384 scan). For ``ListVectors``,
``GetVectors`` and ``QueryVectors`` a ``before-parse`` handler decodes a successful body with
:func:`json.loads` (the same values botocore's JSON parser passes through: its handler for
numbers and documents returns them as they are; orjson reads it where it gives the same
objects, see :func:`read_body`), takes ``vectors`` out and leaves botocore the rest
(``nextToken``, ``distanceMetric``, response metadata) to parse as usual.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

try:
    import orjson as _orjson
except ImportError:  # an optional speed-up: the rows are then formatted with %
    _orjson = None  # type: ignore[assignment]

__all__ = ["EncodedVectors", "encode_put_body", "install", "read_body"]

_CONTEXT_KEY = "vectorport_put_body"
_F32_MAX = np.finfo(np.float32).max


class EncodedVectors(list[dict[str, Any]]):
    """The ``vectors`` of one PutVectors call plus ``body``, the whole request body already
    JSON-encoded. A client without the handlers sends the items as they are (real items);
    :class:`~._bucket.BucketClient`, which installs them, leaves all but the first item's
    data as numpy rows, which botocore would refuse rather than send."""

    def __init__(self, items: list[dict[str, Any]], body: bytes) -> None:
        super().__init__(items)
        self.body = body


def install(client: Any) -> bool:
    """Register the two handlers on ``client`` (idempotent); ``False`` when it has no
    botocore event system."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is None or not hasattr(events, "register"):
        return False
    events.register(
        "before-parameter-build.s3vectors.PutVectors", _stub_params, unique_id="vectorport-put-params"
    )
    events.register("before-call.s3vectors.PutVectors", _swap_body, unique_id="vectorport-put-body")
    for operation in _READS:
        events.register(
            f"before-parse.s3vectors.{operation}", _parse_vectors, unique_id=f"vectorport-parse-{operation}"
        )
    return True


_READS = ("ListVectors", "GetVectors", "QueryVectors")


def _parse_vectors(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
    if response_dict.get("status_code", 500) >= 300:
        return  # errors are botocore's to parse
    body = response_dict.get("body")
    if not body:
        return
    try:
        data = read_body(body)
    except ValueError:
        return  # not JSON: botocore reports it
    if not isinstance(data, dict) or not isinstance(data.get("vectors"), list):
        return
    customized_response_dict["vectors"] = data.pop("vectors")
    response_dict["body"] = json.dumps(data).encode("utf-8")


_BIG = float(2**63)


def read_body(body: bytes) -> Any:
    """A response body of vectors as :func:`json.loads` reads it (or its ``ValueError``),
    read by orjson when installed.

    orjson gives ``json``'s objects except for an integer beyond 64 bits, which it reads as a
    float (and what it refuses, read by ``json`` here). :func:`vectorport._json.fast_loads`
    guards against those by looking for long digit runs in the whole body first, which costs
    here as much as reading the vectors' numbers (a GetVectors of 100 x 384: 2 ms of 6): so
    the body is read first and only what is not vector data is then searched for a float that
    big (a few keys per vector), and read again by ``json`` if one is there. Vector numbers are
    float32 values to every reader (an integer of 20 digits there would be the same float32 as
    int or as float), so they are taken as orjson reads them.
    """
    if _orjson is None:
        return json.loads(body)
    try:
        data = _orjson.loads(body)
    except _orjson.JSONDecodeError:
        return json.loads(body)
    return data if _exact(data) else json.loads(body)


def _exact(doc: Any) -> bool:
    """Whether ``doc``, outside its vectors' ``data.float32`` numbers, has no float that orjson
    may have read from an integer beyond 64 bits."""
    if type(doc) is not dict:
        return not _big(doc)
    for name, value in doc.items():
        if name == "vectors" and type(value) is list:
            for item in value:
                if type(item) is not dict:
                    if _big(item):
                        return False
                    continue
                for field, member in item.items():
                    if field == "data" and type(member) is dict:
                        if any(_big(v) for k, v in member.items() if k != "float32"):
                            return False
                    elif _big(member):
                        return False
        elif _big(value):
            return False
    return True


def _big(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return bool(abs(value) >= _BIG)
    if kind is dict:
        for item in value.values():
            if _big(item):
                return True
    elif kind is list:
        for item in value:
            if _big(item):
                return True
    return False


def _stub_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    vectors = params.get("vectors")
    if isinstance(vectors, EncodedVectors) and vectors:
        context[_CONTEXT_KEY] = vectors.body
        params["vectors"] = list(vectors[:1])


def _swap_body(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    body = context.pop(_CONTEXT_KEY, None)
    if body is not None:
        params["body"] = body


@functools.lru_cache(maxsize=16)
def _row_format(dimension: int) -> str:
    return "[" + ",".join(["%.9g"] * dimension) + "]"


def float_rows(vectors: npt.NDArray[np.float32]) -> list[str]:
    """Each row as a JSON array whose numbers parse back to the identical float32.

    With orjson installed, each number is the shortest decimal that identifies its float32
    (what a float32 parser reads back exactly; 3-10x cheaper than ``%`` formatting here, and
    shorter). A server may read JSON numbers as float64 first and round to float32 after
    (the local server does, as numpy would): the rows :func:`_may_misread` cannot clear are
    read back that very way, and a row that would not come back bit for bit, or would come
    back beyond float32's range as a float64, is written by :func:`_formatted_rows` instead.
    Without orjson every row is.
    """
    if vectors.shape[0] == 0:
        return []
    vectors = np.ascontiguousarray(vectors, np.float32)
    if _orjson is None:
        return _formatted_rows(vectors)
    rows = [_orjson.dumps(row, option=_orjson.OPT_SERIALIZE_NUMPY).decode("ascii") for row in vectors]
    doubt = np.flatnonzero(_may_misread(vectors))
    if not doubt.size:
        return rows
    read = np.array(_orjson.loads("[" + ",".join(rows[i] for i in doubt.tolist()) + "]"), np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, refused just below
        same = read.astype(np.float32).view(np.uint32) == vectors[doubt].view(np.uint32)
    good = same.all(axis=1) & (np.abs(read) <= _F32_MAX).all(axis=1)
    redo = doubt[~good]
    if redo.size:
        for i, row in zip(redo.tolist(), _formatted_rows(vectors[redo]), strict=True):
            rows[i] = row
    return rows


_POW10 = np.array([10.0**p for p in range(-40, 70)])
"""``10 ** p`` for ``p`` from -40: the scale that puts a float32 decade on a grid of 9 to 11
significant digits (:func:`_may_misread`)."""


def _may_misread(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.bool_]:
    """Rows in which the shortest decimal of a number might not read back as the same float32
    through a float64 (``False``: it surely does), in a few vector operations instead of reading
    every number back (a third of a PutVectors' encoding time).

    The shortest decimal ``d`` of ``x`` (at most 9 significant digits) lies within ``x``'s
    rounding interval, whose ends are the midpoints ``m`` to its neighbours, exact float64s. So
    ``float64(d)`` lies in that interval too, and rounds to ``x`` unless it *is* a midpoint
    (a tie) and ``x``'s last mantissa bit is odd, the tie then going to the even neighbour
    (e.g. 7.038531e-26). That needs ``d``, a decimal of at most 9 digits but not ``m`` itself,
    within half a float64 ulp of ``m`` (2**-53 relative): ``m`` scaled to 9 to 11 integer
    digits is then within 2e-15 relative of an integer, which almost no midpoint is (the few that
    are are read back). Beside those, ±float32 max, whose shortest decimal reads as a float64
    beyond float32's range.
    """
    a = np.abs(vectors).astype(np.float64)
    _, exp2 = np.frexp(a)
    half_ulp = np.ldexp(1.0, np.maximum(exp2 - 25, -150))  # float32's (subnormals: 2**-149)
    # floor(log10(a)) or one more: the scaled midpoint has 9 to 11 digits before the point
    scale = _POW10[49 - np.floor(exp2 * 0.30102999566398120).astype(np.int64)]
    near = np.zeros(a.shape, bool)
    for m in (a + half_ulp, a - half_ulp):
        scaled = m * scale
        near |= np.abs(scaled - np.rint(scaled)) <= scaled * 2e-15
    odd = (vectors.view(np.uint32) & 1).astype(bool)
    doubt: npt.NDArray[np.bool_] = ((near & odd) | (a == float(_F32_MAX))).any(axis=1)
    return doubt


def _formatted_rows(vectors: npt.NDArray[np.float32]) -> list[str]:
    """Each row with ``%.9g``: nine significant digits identify a float32, and the detour
    through float64 when a server parses them cannot cross a float32 rounding boundary. Rows
    that ``%.9g`` would misrepresent use ``repr`` instead: ``-0.0`` (written ``-0``, a JSON
    integer that loses the sign) and ±float32 max (written ``3.40282347e+38``, which as a
    float64 is beyond float32's range, so the service would refuse it)."""
    fmt = _row_format(vectors.shape[1])
    odd = ((vectors == 0) & np.signbit(vectors)) | (np.abs(vectors) == _F32_MAX)
    rows = [fmt % tuple(row) for row in vectors.tolist()]
    for i in np.flatnonzero(odd.any(axis=1)).tolist():
        rows[i] = json.dumps(vectors[i].tolist(), separators=(",", ":"))
    return rows


def encode_put_body(
    ids: dict[str, str],
    keys: Sequence[str],
    vectors: npt.NDArray[np.float32],
    metadatas: Sequence[dict[str, Any] | None],
) -> bytes:
    """The PutVectors JSON body botocore would send for these records (ASCII, like
    botocore's ``json.dumps``), with vector numbers written by :func:`float_rows`."""
    dumps = json.dumps
    parts = []
    for key, row, meta in zip(keys, float_rows(vectors), metadatas, strict=True):
        item = '{"key":' + dumps(key) + ',"data":{"float32":' + row + "}"
        if meta:
            item += ',"metadata":' + dumps(meta, separators=(",", ":"), allow_nan=False)
        parts.append(item + "}")
    head = dumps(ids, separators=(",", ":"))[:-1]
    return (head + ',"vectors":[' + ",".join(parts) + "]}").encode("ascii")
