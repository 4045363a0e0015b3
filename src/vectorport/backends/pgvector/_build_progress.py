"""Progress of a running ``CREATE INDEX``, read from ``pg_stat_progress_create_index`` on a
second connection while the build runs, reported through :mod:`vectorport._activity`.

pgvector's HNSW build reports the phase ``building index: loading tuples`` with the heap blocks
scanned (``blocks_done`` of ``blocks_total``) and the tuples added; the bar follows the blocks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..._activity import report
from ._connections import open_connection

__all__ = ["POLL_SECONDS", "watch_index_build"]

log = logging.getLogger("vectorport.pgvector")

POLL_SECONDS = 0.5

_QUERY = (
    "SELECT phase, blocks_done, blocks_total, tuples_done, tuples_total "
    "FROM pg_stat_progress_create_index WHERE pid = %s"
)


def _poll(conninfo: str, pid: int, where: str, stop: threading.Event) -> None:
    try:
        conn = open_connection(conninfo)
    except Exception:  # progress only: the build goes on without it
        log.debug("pgvector: %s: no connection for index build progress", where, exc_info=True)
        return
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
        conn.close()


@contextmanager
def watch_index_build(conninfo: str | None, pid: int, where: str, rows: int) -> Iterator[None]:
    """Report the build running in backend ``pid`` while the block runs: a line when it starts
    and ends, and progress every :data:`POLL_SECONDS` in between."""
    started = time.monotonic()
    report("index_build", f"pgvector: {where}: building the HNSW index over {rows:,} rows")
    stop = threading.Event()
    thread = None
    if conninfo is not None:
        thread = threading.Thread(
            target=_poll, args=(conninfo, pid, where, stop), name="vectorport-index-progress", daemon=True
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
