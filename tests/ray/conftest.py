"""One local Ray cluster per session (``ray.init(num_cpus=2)``), as CI runs it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("vectorport.ray")
    src = str(Path(__file__).resolve().parents[2] / "src")
    # the workers import this checkout of vectorport, as the tests do
    pids = tmp_path_factory.mktemp("ray-pids")
    env = {
        "env_vars": {
            "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            # each shard task writes its worker's pid here, so a test can kill that worker
            "VECTORPORT_RAY_PIDS": str(pids),
        }
    }
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=env)
    ray.pids = pids
    yield ray
    ray.shutdown()
