"""Issue 43 through the CLI (this process): 32-hex UUID bucket keys keep their UUID in a
uuid-keyed pgvector table, and a snapshot with a swapped part is refused before any write; both
read back with psycopg. ``tests/ray/test_ray_keys_and_parts.py`` runs the same on Ray."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ._keys_and_parts import hex_keys_into_a_uuid_table, swapped_part_is_refused

pytestmark = [pytest.mark.pgvector, pytest.mark.s3vectors, pytest.mark.parquet]


def test_32_hex_uuid_keys_keep_their_uuid(url_for: Callable[..., str], pg_dir: Path) -> None:
    report = hex_keys_into_a_uuid_table([], url_for, pg_dir, "hex_uuid_local")
    assert report["status"] == "verified", report


def test_a_swapped_part_is_refused_before_any_write(pg_dir: Path, tmp_path: Path) -> None:
    swapped_part_is_refused([], pg_dir, tmp_path, "swapped_local")
