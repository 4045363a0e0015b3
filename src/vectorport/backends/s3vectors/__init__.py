"""Amazon S3 Vectors and Supabase Vector Buckets (``s3vectors://``, ``supabase://``). The local
S3-Vectors-compatible server to test against is a package of its own, :mod:`vectorport.bucketserver`."""

from .store import S3VectorsStore

__all__ = ["S3VectorsStore"]
