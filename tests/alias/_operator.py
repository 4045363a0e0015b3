"""The cut-over test's harness: app processes (:mod:`._app`) started and stopped around an
operator's script, and the checks every run makes of their logs and of the final store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding

import vectorport
from vectorport import alias
from vectorport.langchain import LangChainStore

from ..migrate._raw import raw_metadata
from ._app import DIM, TEXTS

PROCESSES = 3
BOUND_SLACK = 0.05
"""Seconds allowed beyond the routing bound for the clocks of one host and a call's own start."""


def seed(url: str, n: int = 120) -> None:
    """``n`` records in the store at ``url``, written as the app writes them (LangChain)."""
    lc = LangChainStore(url, DeterministicFakeEmbedding(size=DIM))
    metas = [{"lang": "en" if i % 2 else "fr", "year": 2000 + i % 7, "v": 0} for i in range(n)]
    lc.add_texts(
        [TEXTS[i % len(TEXTS)] for i in range(n)], metadatas=metas, ids=[f"seed-{i}" for i in range(n)]
    )
    lc.close()


class Apps:
    """``n`` app processes on ``url``, started at once (they import their libraries, and load
    ``preload``'s model, while the test prepares the stores) and set going by :meth:`running`."""

    def __init__(
        self, url: str, tmp: Path, n: int = PROCESSES, warm_up: float = 60, preload: str | None = None
    ) -> None:
        self.warm_up = warm_up
        """Seconds the processes have for their first calls (loading an embedding model: more)."""
        self.stop = tmp / "stop"
        self.logs = [tmp / f"app{i}.jsonl" for i in range(n)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        root = Path(__file__).resolve().parents[2]
        self.procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.alias._app", url, str(i), str(log), str(self.stop)]
                + ([preload] if preload else []),
                cwd=root,
                env=env,
            )
            for i, log in enumerate(self.logs)
        ]

    @contextmanager
    def running(self) -> Iterator[list[Path]]:
        """The apps making calls until the block ends; yields their log files."""
        try:
            wait_for(
                lambda: all(log.with_suffix(".ready").exists() for log in self.logs), max(120, self.warm_up)
            )
            self.stop.with_suffix(".go").touch()
            wait_for(
                lambda: all(log.exists() and len(log.read_text().splitlines()) >= 5 for log in self.logs),
                self.warm_up,
            )
            yield self.logs
        finally:
            self.stop.touch()
            self.stop.with_suffix(".go").touch()
            for proc in self.procs:
                proc.wait(timeout=60)
        assert [p.returncode for p in self.procs] == [0] * len(self.procs)


def wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def shadowed(name: str, registry: str, member: str, n: int) -> Callable[[], bool]:
    def enough() -> bool:
        figures = alias.status(name, registry=registry).figures.get(member)
        return figures is not None and figures.queries >= n

    return enough


def entries(logs: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for log in logs for line in log.read_text().splitlines()]


def check_calls(calls: list[dict[str, Any]], min_writes: int = 30) -> None:
    failed = [c for c in calls if not c["ok"]]
    assert not failed, failed[:5]
    assert sum(c["op"] in ("add", "update", "delete") for c in calls) > min_writes


def expected(calls: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """Each written key's last acknowledged state (``None``: deleted)."""
    out: dict[str, dict[str, Any] | None] = {}
    for call in sorted((c for c in calls if c["op"] != "query"), key=lambda c: c["end"]):
        out[call["key"]] = None if call["op"] == "delete" else call["metadata"]
    return out


def check_store(url: str, calls: list[dict[str, Any]], seeded: int) -> None:
    """Every acknowledged write present and equal in ``url`` (read with its own client), every
    acknowledged delete absent, the seed records untouched."""
    held = raw_metadata(url)
    want = expected(calls)
    wrong = {
        k: (v, held.get(k))
        for k, v in want.items()
        if (v is None and k in held) or (v is not None and held.get(k) != v)
    }
    assert not wrong, list(wrong.items())[:5]
    assert sum(1 for k in held if k.startswith("seed-")) == seeded
    assert len(held) == seeded + sum(v is not None for v in want.values())


def check_bound(calls: list[dict[str, Any]], changes: list[tuple[float, float, str]]) -> None:
    """``changes``: (asked, returned, serving) of each switch or rollback. Every call that started
    after a change returned (it returns once the routing bound has passed since its commit), and
    before the next was asked, was served by the store that change made serving."""
    for (_, returned, serving), following in zip(changes, [*changes[1:], None], strict=True):
        until = following[0] if following is not None else float("inf")
        window = [c for c in calls if returned + BOUND_SLACK < c["start"] < until]
        late = [c for c in window if c["served_by"] != serving]
        assert window and not late, (serving, late[:5])


def count(url: str) -> int:
    """The records a member holds (0 when its collection does not exist yet)."""
    try:
        with vectorport.connect(url) as store:
            return store.count()
    except vectorport.NotFoundError:
        return 0
