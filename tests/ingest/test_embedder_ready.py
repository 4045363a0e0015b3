"""An embedder that cannot embed (no key, a refused key, an endpoint that does not answer) fails
``ingest`` with one line and its exit code *before* the collection is created, so nothing is left
behind; the Voyage embedder talks to the local Voyage-protocol server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

from .voyage_server import VoyageServer

pytestmark = pytest.mark.memory


@pytest.fixture(scope="module")
def voyage() -> Iterator[VoyageServer]:
    with VoyageServer("vk-ready") as server:
        yield server


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("# A\n\nThe first document.\n")
    return tmp_path


def exists(url: str) -> bool:
    try:
        vectorport.connect(url).close()
    except vectorport.NotFoundError:
        return False
    return True


@pytest.mark.parametrize(
    ("key", "base", "code", "says"),
    [
        (None, "server", 2, "VOYAGE_API_KEY"),
        ("wrong", "server", 2, "refused"),
        ("vk-ready", "http://127.0.0.1:9", 3, "cannot reach"),
    ],
    ids=["unset-key", "refused-key", "unreachable"],
)
def test_nothing_is_created_when_the_embedder_cannot_embed(
    voyage: VoyageServer,
    docs: Path,
    monkeypatch: pytest.MonkeyPatch,
    key: str | None,
    base: str,
    code: int,
    says: str,
) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    if key is not None:
        monkeypatch.setenv("VOYAGE_API_KEY", key)
    monkeypatch.setenv("VOYAGE_BASE_URL", voyage.base_url if base == "server" else base)
    url = f"memory://ready-{code}-{says.split()[0]}"
    res = CliRunner().invoke(app, ["ingest", str(docs), url, "--embedder", "voyage:voyage-3.5"])
    assert res.exit_code == code, res.output
    assert says in res.stderr and "Traceback" not in res.output
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not exists(url)  # no empty 1024-dimension collection left behind


def test_a_working_key_creates_and_fills_it(
    voyage: VoyageServer, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "vk-ready")
    monkeypatch.setenv("VOYAGE_BASE_URL", voyage.base_url)
    url = "memory://ready-ok"
    res = CliRunner().invoke(app, ["ingest", str(docs), url, "--embedder", "voyage:voyage-3.5"])
    assert res.exit_code == 0, res.output
    store = vectorport.connect(url)
    assert store.count() == 1 and store.spec.dimension == 1024
    store.drop()
