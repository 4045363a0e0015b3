"""Ray Data over vectorport URLs: a store's scan segments read as tasks, a dataset written back
through upsert; records arrive exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import vectorport

from ..migrate._migrate_data import DIM, fit_to, tricky_records

pytestmark = [pytest.mark.ray, pytest.mark.s3vectors]


def test_read_and_write_store(ray_cluster: Any, url_for: Callable[..., str]) -> None:
    from vectorport.ray import read_store, write_store

    source_url = url_for("s3vectors")
    source = vectorport.connect(source_url, dimension=DIM)
    records = fit_to(tricky_records(3_000, DIM), source.capabilities.metadata)
    source.upsert(records)

    from vectorport.ray import StoreDatasource

    assert len(StoreDatasource(source_url, segments=3).get_read_tasks(8)) == 3
    ds = read_store(source_url, segments=3)
    assert ds.count() == 3_000
    assert sorted(ds.schema().names) == ["key", "metadata", "text", "vector"]
    keys = [row["key"] for row in ds.select_columns(["key"]).take_all()]
    assert sorted(keys) == sorted(r.key for r in records)

    target_url = url_for("s3vectors")
    written = write_store(ds, target_url)
    assert written == 3_000
    target = vectorport.connect(target_url)
    assert target.spec.dimension == DIM
    got = {r.key: r for r in target.get([r.key for r in records])}
    for rec in records:
        assert np.array_equal(np.asarray(got[rec.key].vector), np.asarray(rec.vector, dtype=np.float32))
        assert got[rec.key].metadata == rec.metadata and got[rec.key].text == rec.text


def test_import_without_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys

    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "ray" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.delitem(sys.modules, "vectorport.ray", raising=False)
    with pytest.raises(vectorport.NotInstalledError, match=r"pip install 'vectorport\[ray\]'"):
        importlib.import_module("vectorport.ray")


def test_import_vectorport_loads_no_ray() -> None:
    import subprocess
    import sys

    code = (
        "import vectorport, sys; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'pyarrow')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
