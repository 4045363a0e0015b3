"""awslabs ``s3vectors-embed-cli``: the source text under ``S3VECTORS-EMBED-SRC-CONTENT`` of a
vector's metadata (its README asks for that key to be non-filterable)."""

from __future__ import annotations

from typing import Final

from ._preset import BucketShape, Preset

__all__ = ["PRESETS", "TEXT_KEY"]

TEXT_KEY: Final = "S3VECTORS-EMBED-SRC-CONTENT"

PRESETS = (
    Preset("s3vectors-embed-cli", "awslabs s3vectors-embed-cli", bucket=BucketShape(TEXT_KEY), priority=30),
)
