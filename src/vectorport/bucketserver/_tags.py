"""Tags (Tag/Untag/ListTagsForResource, on buckets and indexes) and bucket policies
(Put/Get/DeleteVectorBucketPolicy): the access and bookkeeping operations."""

from __future__ import annotations

import json
from typing import Any

from ._core import BUCKET_ARN, INDEX_ARN, Bucket, Index, ServiceCore
from ._errors import ValidationException

__all__ = ["TagAndPolicyOperations"]


class TagAndPolicyOperations(ServiceCore):
    """Resource tags and vector bucket policies."""

    def _tagged(self, arn: str) -> Bucket | Index:
        arn = arn.strip()
        with self.lock:
            m = INDEX_ARN.fullmatch(arn)
            if m is not None:
                return self._index_named(m.group(1), m.group(2))
            m = BUCKET_ARN.fullmatch(arn)
            if m is not None:
                return self._bucket(m.group(1))
        raise ValidationException(f"Invalid resource ARN: {arn}")

    def TagResource(self, inp: dict[str, Any]) -> dict[str, Any]:
        res = self._tagged(inp["resourceArn"])
        with self.lock:
            self._check_tags({**res.tags, **inp["tags"]}, "The resource", inp["tags"])
            res.tags.update(inp["tags"])
            self._save_catalog()
        return {}

    def UntagResource(self, inp: dict[str, Any]) -> dict[str, Any]:
        res = self._tagged(inp["resourceArn"])
        with self.lock:
            for key in inp["tagKeys"]:
                res.tags.pop(key, None)
            self._save_catalog()
        return {}

    def ListTagsForResource(self, inp: dict[str, Any]) -> dict[str, Any]:
        res = self._tagged(inp["resourceArn"])
        with self.lock:
            return {"tags": dict(res.tags)}

    def PutVectorBucketPolicy(self, inp: dict[str, Any]) -> dict[str, Any]:
        try:
            json.loads(inp["policy"])
        except (TypeError, ValueError):
            raise ValidationException("The bucket policy is not valid JSON") from None
        with self.lock:
            self._bucket(self._bucket_ref(inp)).policy = inp["policy"]
            self._save_catalog()
        return {}

    def GetVectorBucketPolicy(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            policy = self._bucket(self._bucket_ref(inp)).policy
        return {} if policy is None else {"policy": policy}

    def DeleteVectorBucketPolicy(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._bucket(self._bucket_ref(inp)).policy = None
            self._save_catalog()
        return {}
