"""A migration into pgvector killed while the target builds its HNSW index (the last step of a
bulk load) is not complete: its checkpoint says every record was copied but not that the target
is usable, and ``--resume`` builds the index without copying again. Before, the checkpoint was
marked complete before the build, and the resumed run said "already complete" over a table
without its index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport.migrate import Checkpoint

pytestmark = pytest.mark.pgvector

N, DIM = 40_000, 48

MIGRATE = """
import sys, vectorport
vectorport.migrate.run(sys.argv[1], sys.argv[2], checkpoint=sys.argv[3], verify=False, batch_size=5000)
"""


def _building(admin: Any, table: str) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_progress_create_index p JOIN pg_class c ON c.oid = p.relid "
        "WHERE c.relname = %s",
        (table,),
    ).fetchone()
    return bool(row and row[0])


def _has_valid_hnsw(admin: Any, table: str) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
        "JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam "
        "WHERE c.relname = %s AND am.amname = 'hnsw' AND i.indisvalid",
        (table,),
    ).fetchone()
    return bool(row and row[0])


def test_kill_during_the_final_index_build_then_resume(pg_url: Callable[..., str], admin: Any) -> None:
    src_url, dst_url = pg_url(), pg_url()
    table = dst_url.split("table=", 1)[1]
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((N, DIM)).astype(np.float32)
    source = vectorport.connect(src_url, dimension=DIM)
    source.upsert(vectorport.Record(f"doc/{i:06d}", vectors[i], {"i": i}) for i in range(N))
    source.close()
    ck = Path(tempfile.mkdtemp(prefix="vectorport-killbuild-")) / "ck.json"
    proc = subprocess.Popen(
        [sys.executable, "-c", MIGRATE, src_url, dst_url, str(ck)], stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    seen = False
    while proc.poll() is None and time.monotonic() < deadline:
        if _building(admin, table):
            seen = True
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait(timeout=60)
    if not seen:
        pytest.skip("the index build finished before it could be observed; nothing was killed")
    saved = Checkpoint.load(ck)
    assert saved is not None and saved.scanned and saved.copied == N
    assert not saved.complete, "killed during the index build, the checkpoint said complete"
    # the server may finish the orphaned build or roll it back; either way resume must end usable
    admin.execute("SELECT pg_cancel_backend(pid) FROM pg_stat_progress_create_index")
    resumed = vectorport.migrate.run(src_url, dst_url, checkpoint=ck, resume=True)
    assert not resumed.already_complete and resumed.status == "verified", resumed.to_json()
    assert resumed.copy is not None and resumed.copy.records == 0
    assert _has_valid_hnsw(admin, table)
    final = Checkpoint.load(ck)
    assert final is not None and final.complete
    source = vectorport.connect(src_url)
    source.drop()
    source.close()
    dst = vectorport.connect(dst_url)
    dst.drop()
    dst.close()
