from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import vectorport

from .ingest_helpers import write_tree

_names = itertools.count()


@pytest.fixture
def memory_url() -> Iterator[str]:
    url = f"memory://ingest-{uuid.uuid4().hex[:8]}-{next(_names)}"
    yield url
    with contextlib.suppress(vectorport.NotFoundError):
        vectorport.connect(url).drop()


@pytest.fixture
def tree(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    root = tmp_path / "corpus"
    root.mkdir()
    return lambda files: write_tree(root, files)
