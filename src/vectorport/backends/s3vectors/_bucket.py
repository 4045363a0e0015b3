"""The boto3 ``s3vectors`` calls of one index: each call's errors mapped (:mod:`.errors`), writes
paced per index (:mod:`._ratelimit`), puts sent pre-encoded (:mod:`._wire`), and the List and
Query operations followed through their pages.

A :class:`BucketClient` knows the bucket and the index, not the collection's layout or spec: it
takes and returns the service's own shapes (metadata dicts, ``{"float32": [...]}`` data).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._retry import RetryPolicy
from ._client import snake
from ._ratelimit import WriteRateLimiter
from ._wire import EncodedVectors, encode_put_body, install
from .errors import map_errors

__all__ = ["NATIVE_SEGMENTS", "BucketClient"]

NATIVE_SEGMENTS = 16  # ListVectors segmentCount maximum
_LIST_PAGE = 1000  # ListVectors maxResults maximum
_NAMES_PAGE = 500  # ListVectorBuckets / ListIndexes maxResults maximum
MAX_PAYLOAD = 20 << 20
"""The service's request payload limit (20 MiB). 500 vectors at 4,096 dimensions, or 500 with
close to the 40 KB of metadata each may carry, pass it: such a PutVectors is sent in parts."""


class BucketClient:
    """One index's calls through a boto3 ``s3vectors`` client (AWS, Supabase or the local
    server). ``where`` names the index in error messages; ``limiter`` paces writes (``None``:
    unpaced)."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        index: str,
        *,
        where: str,
        retry: RetryPolicy,
        limiter: WriteRateLimiter | None = None,
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.index = index
        self.where = where
        self.retry = retry
        self.limiter = limiter
        # The batch is validated already: send it pre-encoded instead of through botocore's
        # per-number validation and serialization (see _wire).
        self._fast_puts = install(client)

    @property
    def ids(self) -> dict[str, str]:
        """The parameters naming the index in every call."""
        return {"vectorBucketName": self.bucket, "indexName": self.index}

    def call(self, operation: str, **params: Any) -> Any:
        """One call of ``operation`` (``GetIndex``), its errors mapped; not retried."""
        method = getattr(self.client, snake(operation))
        with map_errors(self.where, operation):
            return method(**params)

    def retried(self, what: str, operation: str, **params: Any) -> Any:
        """One call retried on transient errors (throttling) by the store's policy."""
        return self.retry.call(functools.partial(self.call, operation, **params), what)

    def names(self, operation: str, field: str, name: str, **params: Any) -> list[str]:
        """Every name a List operation (``ListIndexes``) pages through, sorted."""
        names: list[str] = []
        token: str | None = None
        while True:
            page_params = {**params, "maxResults": _NAMES_PAGE, **({"nextToken": token} if token else {})}
            page = self.retried("list", operation, **page_params)
            names.extend(str(item[name]) for item in page.get(field, []))
            token = page.get("nextToken")
            if not token:
                return sorted(names)

    def tag(self, arn: str | None, name: str) -> str | None:
        """The value of the tag ``name`` on the resource ``arn`` (``None``: no such tag, or the
        tags cannot be read: they are optional, never a reason to fail)."""
        if not arn:
            return None
        try:
            tags = self.call("ListTagsForResource", resourceArn=arn).get("tags") or {}
        except Exception:  # tags are optional (permissions, Supabase); never fail an open for them
            return None
        value = tags.get(name)
        return str(value) if value else None

    def query(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Every result of one QueryVectors request (its ``topK``), following its pages."""
        resp = self.call("QueryVectors", **request)
        found: list[dict[str, Any]] = list(resp.get("vectors", []))
        while resp.get("nextToken") and len(found) < request["topK"]:
            # topK beyond one page (100) comes back in pages; a page request carries the token
            # with the same query, as the SDK paginator does.
            resp = self.call("QueryVectors", **{**request, "nextToken": resp["nextToken"]})
            found.extend(resp.get("vectors", []))
        return found

    def put(
        self, keys: Sequence[str], vectors: npt.NDArray[np.float32], metas: Sequence[dict[str, Any]]
    ) -> None:
        """PutVectors for at most 500 vectors, paced: one call, or one per half (recursively)
        when the request body would pass :data:`MAX_PAYLOAD` (each half is an upsert of its
        own records, so a retry of the whole is still idempotent)."""
        if self._fast_puts and len(keys) > 1:
            # botocore sees the first item alone (see _wire): the others keep numpy rows, not
            # Python floats (~10 µs a row), which botocore would refuse, never send, if it saw them
            rows: Sequence[Any] = [vectors[0].tolist(), *vectors[1:]]
        else:
            rows = vectors.tolist()
        items: list[dict[str, Any]] = []
        for key, row, meta in zip(keys, rows, metas, strict=True):
            item: dict[str, Any] = {"key": key, "data": {"float32": row}}
            if meta:
                item["metadata"] = meta
            items.append(item)
        if self._fast_puts:
            items = EncodedVectors(items, encode_put_body(self.ids, keys, vectors, metas))
            size = len(items.body)
        else:  # botocore's own body: its json.dumps of the request, floats as repr
            size = len(json.dumps({**self.ids, "vectors": items}).encode())
        if size > MAX_PAYLOAD and len(keys) > 1:
            half = len(keys) // 2
            self.put(keys[:half], vectors[:half], metas[:half])
            self.put(keys[half:], vectors[half:], metas[half:])
            return
        if self.limiter is not None:
            self.limiter.acquire(len(items))
        self.call("PutVectors", **self.ids, vectors=items)

    def delete(self, keys: Sequence[str]) -> None:
        """One DeleteVectors call (at most 500 keys), paced."""
        if self.limiter is not None:
            self.limiter.acquire(len(keys))
        self.call("DeleteVectors", **self.ids, keys=list(keys))

    def count(self, workers: int) -> int:
        """How many vectors the index holds. There is no count API: keys only are listed, over
        16 segments in parallel when ``workers`` > 1."""
        segments = NATIVE_SEGMENTS if workers > 1 else 1

        def count_segment(seg: int) -> int:
            total, token = 0, None
            while True:
                request: dict[str, Any] = {**self.ids, "maxResults": _LIST_PAGE}
                if segments > 1:
                    request.update(segmentCount=segments, segmentIndex=seg)
                if token:
                    request["nextToken"] = token
                page = self.retried("count", "ListVectors", **request)
                total += len(page.get("vectors", []))
                token = page.get("nextToken")
                if not token:
                    return total

        with ThreadPoolExecutor(max_workers=min(workers, segments)) as pool:
            return sum(pool.map(count_segment, range(segments)))

    def close(self) -> None:
        closer = getattr(self.client, "close", None)
        if callable(closer):
            closer()
