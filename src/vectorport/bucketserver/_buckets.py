"""Vector bucket operations: Create/Get/List/DeleteVectorBucket and the bucket's default
index mode."""

from __future__ import annotations

import re
import time
from typing import Any

from ._core import Bucket, ServiceCore, check_encryption
from ._errors import ConflictException, ServiceQuotaExceededException, ValidationException
from ._paging import page_names

__all__ = ["BucketOperations"]

_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")


class BucketOperations(ServiceCore):
    """The vector bucket operations."""

    def CreateVectorBucket(self, inp: dict[str, Any]) -> dict[str, Any]:
        name = inp["vectorBucketName"]
        if not _BUCKET_NAME.fullmatch(name):
            raise ValidationException(
                f"Invalid vector bucket name {name!r}: use 3-63 lowercase letters, numbers and hyphens, "
                "beginning and ending with a letter or number"
            )
        encryption = check_encryption(inp.get("encryptionConfiguration")) or {"sseType": "AES256"}
        self._check_tags(dict(inp.get("tags") or {}), "The vector bucket")
        with self.lock:
            if name in self.buckets:
                raise ConflictException(f"A vector bucket with the name {name} already exists")
            if len(self.buckets) >= self.limits.max_buckets:
                raise ServiceQuotaExceededException(
                    f"The account already has {len(self.buckets)} vector buckets in this Region, "
                    f"the maximum ({self.limits.max_buckets})"
                )
            bucket = Bucket(
                name, self._bucket_arn(name), time.time(), encryption, tags=dict(inp.get("tags") or {})
            )
            self.buckets[name] = bucket
            self._save_catalog()
        return {"vectorBucketArn": bucket.arn}

    def GetVectorBucket(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            b = self._bucket(self._bucket_ref(inp))
            out: dict[str, Any] = {
                "vectorBucketName": b.name,
                "vectorBucketArn": b.arn,
                "creationTime": b.created,
                "encryptionConfiguration": b.encryption,
            }
            out["defaultIndexMode"] = self._default_mode(b)
        return {"vectorBucket": out}

    def ListVectorBuckets(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            names = sorted(n for n in self.buckets if n.startswith(inp.get("prefix") or ""))
            chosen, token = page_names(names, inp.get("maxResults") or 500, inp.get("nextToken"))
            items = [
                {
                    "vectorBucketName": n,
                    "vectorBucketArn": self.buckets[n].arn,
                    "creationTime": self.buckets[n].created,
                }
                for n in chosen
            ]
        out: dict[str, Any] = {"vectorBuckets": items}
        if token:
            out["nextToken"] = token
        return out

    def DeleteVectorBucket(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            bucket = self._bucket(self._bucket_ref(inp))
            if bucket.indexes:
                raise ConflictException(
                    f"The vector bucket {bucket.name} is not empty: delete its {len(bucket.indexes)} "
                    "vector index(es) first"
                )
            del self.buckets[bucket.name]
            self._save_catalog()
        return {}

    def PutVectorBucketDefaultIndexMode(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._bucket(self._bucket_ref(inp)).default_index_mode = inp["defaultIndexMode"]
            self._save_catalog()
        return {}
