"""A snapshot of large texts is imported — copied and verified, its sampled queries asked of the
snapshot — in memory bounded by the page size in bytes, not by how many records a page holds: 12
texts of 8 MB (a snapshot of a few KB, zstd) go into pgvector with the importing process's peak
RSS growing by a bounded number of pages (``PAGE_BYTES``): row groups of at most a page are read
one at a time, never a whole part, and a search of the snapshot reads no text. Twice the texts
take no more: the growth is measured at two sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import vectorport
from vectorport import Record
from vectorport._paging import PAGE_BYTES
from vectorport.snapshot import export

pytestmark = [pytest.mark.parquet, pytest.mark.pgvector, pytest.mark.slow]

N, TEXT_MB = 12, 8

# The heavy modules are imported before the baseline: their size is no part of the import's.
# The peak is the kernel's VmHWM, reset first (clear_refs 5): getrusage's ru_maxrss would start
# at pytest's own peak, which a child inherits through fork and exec.
PROBE = """
import json, sys
import numpy, psycopg, pyarrow, pyarrow.compute, pyarrow.parquet, vectorport, vectorport.migrate
from vectorport.backends.parquet import ParquetStore
from vectorport.backends.pgvector import PgVectorStore
def status(field):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
base = status("VmRSS")
report = vectorport.migrate.run(sys.argv[1], sys.argv[2])
print(json.dumps({"status": report.status, "growth": status("VmHWM") - base}))
"""


def _import_growth(n: int, pg_dir: Path, tmp_path: Path) -> int:
    """Export ``n`` texts of ``TEXT_MB`` and import them into pgvector in a fresh process,
    verified; the importing process's peak RSS growth."""
    source = f"memory://large-texts-{n}"
    with vectorport.connect(source, dimension=4) as store:
        for i in range(n):
            store.upsert(
                [Record(f"big{i}", [1.0, i, 0.5, 0.25], {"i": i}, chr(97 + i % 26) * (TEXT_MB << 20))]
            )
    export(source, tmp_path / f"snap{n}", verify=False)
    vectorport.connect(source).drop()
    target = f"pgvector://{pg_dir}?table=large_texts_{n}"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, f"parquet://{tmp_path / f'snap{n}'}", target],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == "verified"
    with vectorport.connect(target) as copied:
        got = copied.get(["big0", f"big{n - 1}"])
    assert [len(r.text or "") for r in got] == [TEXT_MB << 20] * 2
    print(f"peak RSS growth {out['growth'] / 2**20:.0f} MB for {n * TEXT_MB} MB of texts")
    return int(out["growth"])


def test_large_texts_import_in_memory_bounded_by_the_page_bytes(pg_dir: Path, tmp_path: Path) -> None:
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to measure one run's peak RSS")
    small = _import_growth(N, pg_dir, tmp_path)
    # pages in flight (a window of 8, 4 of them being written, each write holding its page about
    # three times over) and one row group read: about 20 pages, whatever the snapshot holds
    # (measured: 291 MB for 96 MB, 306 MB for 192 MB); a part read whole and pages of every record
    # it holds took 580 MB for 96 MB, and twice that for 192 MB. Verified (the default), 317 MB for
    # 96 MB and 298 MB for 192 MB: a search of the snapshot reads keys and vectors only (it read
    # whole parts, texts too: 327 MB, then 486 MB).
    assert small < 26 * PAGE_BYTES
    # and it does not grow with the snapshot: twice the texts (96 MB more) must not take even half
    # of that more (memory that held each text once, or a part per record, would take all of it)
    large = _import_growth(2 * N, pg_dir, tmp_path)
    assert large - small < N * (TEXT_MB << 20) // 2, (small >> 20, large >> 20)
