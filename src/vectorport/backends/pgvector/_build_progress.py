"""Progress of a running ``CREATE INDEX``, read from ``pg_stat_progress_create_index`` on a
second connection while the build runs (the store's own, or one its SQLAlchemy engine's pool
has idle), reported through :mod:`vectorport._activity`.

pgvector's HNSW build reports the phase ``building index: loading tuples`` with the heap blocks
scanned (``blocks_done`` of ``blocks_total``) and the tuples added; the bar follows the blocks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from ..._activity import report

__all__ = ["POLL_SECONDS", "watch_index_build"]

log = logging.getLogger("vectorport.pgvector")

POLL_SECONDS = 0.5

_QUERY = (
    "SELECT phase, blocks_done, blocks_total, tuples_done, tuples_total "
    "FROM pg_stat_progress_create_index WHERE pid = %s"
)


def _poll(
    spare: tuple[psycopg.Connection[Any], Callable[[], None]], pid: int, where: str, stop: threading.Event
) -> None:
    conn, give_back = spare
    try:
        while not stop.wait(POLL_SECONDS):
            row = conn.execute(_QUERY, (pid,)).fetchone()
            if row is None:
                continue
            phase, blocks_done, blocks_total, tuples_done, tuples_total = row
            if blocks_total:
                done, total = int(blocks_done), int(blocks_total)
            else:
                done, total = int(tuples_done or 0), int(tuples_total or 0)
            report("index_build", f"pgvector: {where}: {phase}", done=done, total=total or None)
    except Exception:
        log.debug("pgvector: %s: index build progress stopped", where, exc_info=True)
    finally:
        give_back()


@contextmanager
def watch_index_build(
    spare: Callable[[], tuple[psycopg.Connection[Any], Callable[[], None]] | None],
    pid: int,
    where: str,
    rows: int,
) -> Iterator[None]:
    """Report the build running in backend ``pid`` while the block runs: a line when it starts
    and ends, and progress every :data:`POLL_SECONDS` in between, read on the connection
    ``spare`` gives (the store's :meth:`~._connections.Connections.spare`: one of its own, or
    an engine's idle one; none, no progress: the build goes on without it)."""
    started = time.monotonic()
    report("index_build", f"pgvector: {where}: building the HNSW index over {rows:,} rows")
    stop = threading.Event()
    thread = None
    try:
        second = spare()
    except Exception:  # progress only: the build goes on without it
        log.debug("pgvector: %s: no connection for index build progress", where, exc_info=True)
        second = None
    if second is not None:
        thread = threading.Thread(
            target=_poll, args=(second, pid, where, stop), name="vectorport-index-progress", daemon=True
        )
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=5)
    report(
        "index_build",
        f"pgvector: {where}: HNSW index built in {time.monotonic() - started:.1f}s",
        finished=True,
    )
