"""The ``parquet://`` URL of a snapshot directory, with or without the digest it must have.
No pyarrow here: naming a snapshot is cheap."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from ..._url import mask_url
from ...exceptions import ConfigurationError

__all__ = ["expecting", "snapshot_url"]


def snapshot_url(directory: str | os.PathLike[str], expect_digest: str | None = None) -> str:
    """The ``parquet://`` URL of a snapshot directory (absolute, so it means the same anywhere
    on this machine, or on a cluster's shared file system); with ``expect_digest`` (the
    snapshot digest export printed), the store it opens refuses any other snapshot."""
    url = "parquet://" + quote(str(Path(directory).expanduser().resolve()))
    return url if expect_digest is None else expecting(url, expect_digest)


def expecting(url: str, expect_digest: str) -> str:
    """``url`` (a ``parquet://`` snapshot) with the ``expect_digest`` parameter set, so whatever
    opens it — a local run or Ray workers — refuses a snapshot with another digest."""
    if urlsplit(url).scheme != "parquet":
        raise ConfigurationError(
            f"an expected digest checks a snapshot, and {mask_url(url)} is not one: give it for the "
            "parquet://DIR store (or import DIR)"
        )
    # (urlunsplit would drop the ``//`` of ``parquet:///abs/dir``, a URL with no host)
    head, _, query = url.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "expect_digest"]
    return f"{head}?{urlencode([*kept, ('expect_digest', expect_digest)])}"
