"""A local S3-Vectors-compatible server: the S3 Vectors REST-JSON API (as botocore's
``s3vectors`` model describes it) and the Supabase Vector Buckets route, backed by exact
numpy search and, with a data directory, a write-ahead log. It is a program of its own,
beside the ``s3vectors`` adapter (:mod:`vectorport.backends.s3vectors`), which reaches it
over HTTP as it reaches AWS.

>>> from vectorport.bucketserver import running
>>> with running() as url:  # doctest: +SKIP
...     import boto3
...     s3v = boto3.client("s3vectors", endpoint_url=url, region_name="us-east-1",
...                        aws_access_key_id="x", aws_secret_access_key="x")
...     s3v.create_vector_bucket(vectorBucketName="docs")

Start it from a shell with ``vectorport bucket serve --data DIR --port 8080`` or
``python -m vectorport.bucketserver --data DIR --port 8080``.
"""

from ._core import Limits
from ._http import Throttle
from ._local import LocalServer, running
from ._main import serve

__all__ = ["Limits", "LocalServer", "Throttle", "running", "serve"]
