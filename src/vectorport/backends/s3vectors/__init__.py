"""Amazon S3 Vectors and Supabase Vector Buckets (``s3vectors://``, ``supabase://``), plus a
local S3-Vectors-compatible server in :mod:`.server`."""

from .store import S3VectorsStore

__all__ = ["S3VectorsStore"]
