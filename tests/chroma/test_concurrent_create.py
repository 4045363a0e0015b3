"""Two processes opening one new embedded Chroma directory at once (two migrations into one new
target) both succeed: the database's first initialisation is serialised by a lock file. Without
it about one start in eight failed with "table collections already exists" or "database is
locked" (and two concurrent `vectorport migrate` into one new directory, two in six)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.chroma

OPENER = """
import sys, time
from vectorport.backends.chroma._client import embedded_client
go = float(sys.argv[3])
while time.time() < go:
    time.sleep(0.0005)
client = embedded_client(sys.argv[1])
client.create_collection(sys.argv[2])
"""


@pytest.mark.parametrize("attempt", range(6))
def test_two_processes_initialise_one_new_directory(attempt: int) -> None:
    db = Path(tempfile.mkdtemp(prefix="vectorport-chroma-race-")) / "db"
    go = time.time() + 2.5  # both start together, after their imports
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(db), f"coll-{name}", str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]


def test_the_initialisation_leaves_no_lock_file_behind(tmp_path: Path) -> None:
    """The lock file once stayed beside the directory (``.NAME.vectorport-init.lock`` in the
    working directory of ``chroma://./NAME``); it is removed once the database exists."""
    subprocess.run(
        [sys.executable, "-c", OPENER, "fresh-db", "coll", "0"], cwd=tmp_path, check=True, timeout=120
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh-db"]
    assert not [p.name for p in (tmp_path / "fresh-db").iterdir() if p.name.endswith(".lock")]
