"""Layouts as data: where each convention (vectorport's own, LangChain, LlamaIndex, vecs, the
Supabase template, s3vectors-embed-cli, Haystack) keeps a chunk's key, vector, text and
bookkeeping on every backend it writes, one module per convention.

Each module declares its ``PRESETS`` (:class:`Preset`: a ``layout=`` name with a
:class:`TableShape` for pgvector, a :class:`BucketShape` for vector buckets, a
:class:`ChromaShape` for Chroma) beside the pure functions that read and write the shape. The
pgvector, Chroma and bucket backends read :func:`presets` for their ``layout=`` choices,
detection and shapes: a new preset is one module here (see ``docs/backends.md``).
"""

from ._preset import BucketShape, ChromaShape, Preset, TableShape, preset, presets

__all__ = ["BucketShape", "ChromaShape", "Preset", "TableShape", "preset", "presets"]
