"""The S3 Vectors operations over in-memory state, persisted under an optional directory.

Each operation is a method named as in botocore's ``s3vectors`` model (the HTTP layer looks
it up by that name): it takes the operation's input, already checked against the model, and
returns its output dict, or raises a :class:`~._errors.ServiceError`. The operations are
grouped as the S3 Vectors API groups them, one mixin per module over the shared
:class:`~._core.ServiceCore`:

========================  ==========================================================
:mod:`._buckets`          Create/Get/List/DeleteVectorBucket, PutVectorBucketDefaultIndexMode
:mod:`._indexes`          Create/Get/List/DeleteIndex, UpdateIndexMode, UpdateMetadataConfiguration
:mod:`._vectors`          Put/Get/Delete/ListVectors
:mod:`._query`            QueryVectors (vector, full-text, hybrid; result pages)
:mod:`._tags`             Tag/Untag/ListTagsForResource, Put/Get/DeleteVectorBucketPolicy
========================  ==========================================================
"""

from __future__ import annotations

from ._buckets import BucketOperations
from ._core import Limits
from ._indexes import IndexOperations
from ._query import QueryOperations
from ._tags import TagAndPolicyOperations
from ._vectors import VectorOperations

__all__ = ["Limits", "Service"]


class Service(BucketOperations, IndexOperations, VectorOperations, QueryOperations, TagAndPolicyOperations):
    """All buckets and indexes of one server. Thread-safe."""
