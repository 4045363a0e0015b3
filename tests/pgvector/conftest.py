"""One embedded PostgreSQL + pgvector server for the whole pgvector test session."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import vectorport

_names = itertools.count()


@pytest.fixture(scope="session")
def pg_dir() -> Iterator[Path]:
    """The data directory of a real server started once (and stopped at the end).

    Not under pytest's tmp_path: pytest keeps /tmp/pytest-of-<user> at mode 0700, and when the
    tests run as root the server runs as an unprivileged system user that must reach the
    directory.
    """
    from vectorport.backends.pgvector._embedded import stop_embedded

    root = Path(tempfile.mkdtemp(prefix="vectorport-pgvector-tests-"))
    root.chmod(0o755)
    data = root / "data"
    store = vectorport.connect(f"pgvector://{data}?table=warmup", dimension=2)
    store.drop()
    store.close()
    yield data
    stop_embedded(data)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url(pg_dir: Path) -> Callable[..., str]:
    """``pg_url(table=None, **params)``: a URL of the session server; a fresh table by default."""

    def make(table: str | None = None, **params: object) -> str:
        name = table or f"t{next(_names)}"
        extra = "".join(f"&{k}={v}" for k, v in params.items())
        return f"pgvector://{pg_dir}?table={name}{extra}"

    return make
