"""The local bucket server the test suites run this backend against."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...bucketserver import LocalServer

__all__ = ["TEST_SUPABASE_KEY", "local_server"]

TEST_SUPABASE_KEY = "test-service-role-key"
"""The service-role key the test server's Supabase route requires."""


@contextlib.contextmanager
def local_server(directory: Path) -> Iterator[Any]:
    """vectorport's local S3 Vectors server (in memory, Supabase mode on with
    :data:`TEST_SUPABASE_KEY`) served in this process for the block; yields the
    :class:`~vectorport.bucketserver.LocalServer` (its ``url`` is the endpoint)."""
    del directory  # in memory: nothing outlives the session
    srv = LocalServer(supabase_key=TEST_SUPABASE_KEY)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
