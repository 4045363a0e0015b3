"""Issue 43 on Ray (``--engine ray``, two workers): 32-hex UUID bucket keys keep their UUID in a
uuid-keyed pgvector table, and a snapshot with a swapped part is refused before any shard
writes; both read back with psycopg (the scenarios of ``tests/migrate/_keys_and_parts.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..migrate._keys_and_parts import hex_keys_into_a_uuid_table, swapped_part_is_refused

pytestmark = [pytest.mark.ray, pytest.mark.pgvector, pytest.mark.s3vectors, pytest.mark.parquet]

RAY = ["--engine", "ray", "--workers", "2"]


def test_32_hex_uuid_keys_keep_their_uuid_on_ray(
    ray_cluster: Any, url_for: Callable[..., str], pg_dir: Path
) -> None:
    report = hex_keys_into_a_uuid_table(RAY, url_for, pg_dir, "hex_uuid_ray")
    assert report["engine"] == "ray" and report["status"] == "verified", report


def test_a_swapped_part_is_refused_before_any_write_on_ray(
    ray_cluster: Any, pg_dir: Path, tmp_path: Path
) -> None:
    swapped_part_is_refused(RAY, pg_dir, tmp_path, "swapped_ray")
