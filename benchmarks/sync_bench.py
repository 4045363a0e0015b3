"""A sync after a small change against a full migration of the same collection, in one run;
and ``sync --follow`` from a pgvector source under a steady write load.

    python benchmarks/sync_bench.py [--n 200000] [--dim 128] [--changed 0.001] [--capture-changes 100]
    python benchmarks/sync_bench.py follow --target s3vectors|chroma [--n 10000] [--rate 1000] [--seconds 60]
        [--dim 128] [--timeline] [--target-options ef_construction=50,...]
    python benchmarks/sync_bench.py parquet [--n 50000] [--dim 128] [--changes 100] [--target memory|pgvector]

Each also takes ``--json``, ``--output FILE`` and ``--quick`` (a smoke-test size).

Source and target are tables of one embedded pgvector server. In order:

1. load the source (not timed);
2. ``vectorport.migrate`` source → target: plan, copy, HNSW build, verify;
3. the first ``vectorport.sync`` of the pair: a full pass that reads the target once and
   records what it holds (after a migrate it writes nothing);
4. change ``--changed`` of the source (half updated, a quarter new, a quarter deleted);
5. ``vectorport.sync --delete``: the incremental pass this benchmark is about;
6. change capture installed on the source (a logical replication slot), a sync pass that notes
   its position, ``--capture-changes`` changes, and the sync pass that applies them from the slot
   without scanning (timed: the figure the capture is about);
7. ``vectorport.verify`` (not timed): the target must equal the source.

``follow``: a pgvector source of ``--n`` records receives ``--rate`` writes per second for
``--seconds`` (half upserts of new or changed records, a quarter metadata-only updates, a quarter
deletes, in transactions of 50) while ``vectorport sync SRC DST --delete --follow --json`` runs
into the local bucket server or an embedded Chroma; the lag it reports (the age of the oldest
change not yet applied, at each read of the slot) is summarised as p50/p95/max, and after the
writes stop and it caught up, ``verify`` must find the target equal. ``--timeline`` adds every
reading (seconds since the first write, lag, changes read). ``--target-options`` adds options to
the target's URL (for Chroma, the collection's HNSW settings at creation: ``ef_construction=50``).
The cores used on average, while the writes ran and while the follower caught up after them:
the follower, the source's PostgreSQL server (the writes, the slot's decoding, the read-back),
this process (the writer threads; the local bucket server too, when it is the target), and what
the machine's other processes used.

``parquet``: a Parquet snapshot source (``parquet://DIR``, exported from ``--n`` records) and a
memory (or embedded pgvector) target: the migration, the first sync, ``--changes`` changes written
in place through ``parquet://`` (half updated, a quarter new, a quarter deleted) and the pass
that reads only the key bins whose digests changed; then the manifest's per-bin digests are
removed (as in a snapshot written before parts kept them), ``--changes`` more changes, and the
pass that scans every record, as every pass did before: the two passes side by side.

For each timed step: seconds, records read from the source and from the target, records
written and deleted. The migration's reads are counted from its report (plan and verify scan
the source, verify reads every target record); the sync's from its report.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import _harness as h
import numpy as np

import vectorport
from vectorport import Record
from vectorport.backends.parquet._format import MANIFEST
from vectorport.bucketserver import LocalServer
from vectorport.snapshot import export, snapshot_url

BATCH = 2000


def _records(start: int, stop: int, dim: int, version: int = 0) -> list[Record]:
    rng = np.random.default_rng(start * 31 + version)
    vecs = rng.standard_normal((stop - start, dim)).astype(np.float32)
    return [
        Record(
            f"docs/file{i // 20}.md#chunk{i % 20}",
            vecs[i - start],
            {"file": i // 20, "chunk": i % 20, "version": version, "lang": ("en", "de", "fr")[i % 3]},
            f"chunk {i} of the benchmark corpus, version {version}",
        )
        for i in range(start, stop)
    ]


def _capture_pass(
    store: Any, src: str, dst: str, state: Path, n: int, dim: int, changes: int
) -> dict[str, Any]:
    """Steps 6: capture on, a pass noting its position, ``changes`` changes, the capture pass."""
    store.setup_capture("slot")
    vectorport.sync(src, dst, state=state, delete=True)  # scans once more, noting the slot's position
    half, quarter = changes // 2, changes // 4
    store.upsert(_records(1000, 1000 + half, dim, version=2))  # updated
    store.upsert(_records(n + n, n + n + quarter, dim))  # new
    store.delete([r.key for r in _records(5000, 5000 + changes - half - quarter, dim)])  # deleted
    t0 = time.monotonic()
    r = vectorport.sync(src, dst, state=state, delete=True)
    seconds = time.monotonic() - t0
    assert r.sync.mode == "capture", r.sync.mode
    store.teardown_capture()
    return {
        "changes": changes,
        "seconds": round(seconds, 3),
        "mode": r.sync.mode,
        "source_read": r.sync.source_read,
        "target_read": r.sync.target_read,
        "written": r.sync.written,
        "deleted": r.sync.deleted,
    }


def _migrate_step(src: str, dst: str, checkpoint: Path, n: int) -> dict[str, Any]:
    """Step 2: the migration of the pair, timed, with what it read and wrote."""
    t0 = time.monotonic()
    report = vectorport.migrate.run(src, dst, checkpoint=checkpoint, sample_queries=20)
    seconds = time.monotonic() - t0
    assert report.status in ("verified", "quality"), report.status
    assert report.copy is not None and report.verification is not None
    return {
        "seconds": round(seconds, 2),
        "copy_seconds": round(report.copy.seconds, 2),
        "index_seconds": round(report.copy.index_seconds, 2),
        # the plan scans the source (no vectors), the copy and the verification scan it again
        "source_read": 3 * n,
        # verification reads every target record by key, then lists every key
        "target_read": 2 * n,
        "written": report.copy.records,
        "deleted": 0,
    }


def run(n: int, dim: int, changed: float, capture_changes: int = 100) -> dict[str, Any]:
    with h.workdir("sync-bench") as root:
        data = root / "data"
        src, dst = f"pgvector://{data}?table=source", f"pgvector://{data}?table=target"
        out: dict[str, Any] = {"records": n, "dim": dim, "changed_fraction": changed}
        store = vectorport.connect(src, dimension=dim)
        t0 = time.monotonic()
        with store.bulk_load(n):  # the index built once at the end, not row by row
            for start in range(0, n, BATCH):
                store.upsert(_records(start, min(n, start + BATCH), dim))
        out["load_seconds"] = round(time.monotonic() - t0, 2)

        out["migrate"] = _migrate_step(src, dst, root / "ck.json", n)

        state = root / "sync.sqlite"
        for name, delete in (("first_sync", False), ("sync", True)):
            if name == "sync":
                k = max(4, int(n * changed))
                store.upsert(_records(0, k // 2, dim, version=1))  # updated
                store.upsert(_records(n, n + k // 4, dim))  # new
                store.delete([r.key for r in _records(n - k // 4, n, dim)])  # deleted
                out["changes"] = {"updated": k // 2, "new": k // 4, "deleted": k // 4}
            t0 = time.monotonic()
            r = vectorport.sync(src, dst, state=state, delete=delete)
            seconds = time.monotonic() - t0
            s = r.sync
            out[name] = {
                "seconds": round(seconds, 2),
                "mode": s.mode,
                "source_read": s.source_read,
                "target_read": s.target_read,
                "written": s.written,
                "deleted": s.deleted,
                "bins": s.bins,
                "bins_checked": s.bins_checked,
            }
        out["capture_pass"] = _capture_pass(store, src, dst, state, n, dim, capture_changes)
        check = vectorport.verify(src, dst, sample_queries=0)
        assert check.data_equal, check.to_dict()
        out["verified_equal"] = True
        m, s_ = out["migrate"], out["sync"]
        out["sync_vs_migrate"] = {
            "time": round(s_["seconds"] / m["seconds"], 4),
            "target_read": round(s_["target_read"] / m["target_read"], 4),
            "source_read": round(s_["source_read"] / m["source_read"], 4),
            "written": round((s_["written"] + s_["deleted"]) / m["written"], 4),
        }
        c = out["capture_pass"]
        out["capture_vs_migrate"] = {
            "time": round(c["seconds"] / m["seconds"], 5),
            "source_read_of_rows": round(c["source_read"] / n, 5),
        }
        store.close()
        return out


def _table(out: dict[str, Any]) -> str:
    labels = {
        "migrate": "migrate (plan, copy, index, verify)",
        "first_sync": "first sync (full pass)",
        "sync": f"sync --delete after {out['changed_fraction']:.1%} changed",
    }
    c = out["capture_pass"]
    rows = [
        [
            labels[name],
            out[name]["seconds"],
            *(out[name][k] for k in ("source_read", "target_read", "written", "deleted")),
        ]
        for name in labels
    ]
    rows.append(
        [
            f"sync --delete from the slot after {c['changes']} changes",
            c["seconds"],
            c["source_read"],
            c["target_read"],
            c["written"],
            c["deleted"],
        ]
    )
    ratio, cap = out["sync_vs_migrate"], out["capture_vs_migrate"]
    return "\n".join(
        [
            h.table(
                ["step", "seconds", "source records read", "target records read", "written", "deleted"], rows
            ),
            "",
            f"sync / migrate: time {ratio['time']:.1%}, target reads {ratio['target_read']:.1%}, "
            f"writes {ratio['written']:.2%} ({out['records']:,} records, {out['dim']} dims; the migrate's "
            f"index build took {out['migrate']['index_seconds']:.1f}s of it)",
            f"capture pass / migrate: time {cap['time']:.2%}, "
            f"source rows read {cap['source_read_of_rows']:.3%}",
        ]
    )


def _writer(url: str, n: int, dim: int, rate: int, seconds: float, done: list[int], seed: int = 0) -> None:
    """``rate`` writes per second for ``seconds``, in transactions of 50: half upserts of new or
    changed records, a quarter metadata-only updates (the same vector), a quarter deletes."""
    rng = random.Random(7 + seed)
    store = vectorport.connect(url)
    step = 50
    start = time.monotonic()
    written = 0
    version = 1
    try:
        while time.monotonic() - start < seconds:
            due = start + written / rate
            if due > time.monotonic():
                time.sleep(due - time.monotonic())
            kind = rng.random()
            first = rng.randrange(0, 2 * n - step)
            if kind < 0.5:
                version += 1
                store.upsert(_records(first, first + step, dim, version=version))
            elif kind < 0.75:
                got = store.get([r.key for r in _records(first, first + step, dim)])
                store.upsert(
                    [Record(r.key, r.vector, {**r.metadata, "touched": written}, r.text) for r in got]
                )
            else:
                store.delete([r.key for r in _records(first, first + step, dim)])
            written += step
    finally:
        done.append(written)
        store.close()


def _cpu_seconds(pid: int) -> float:
    """A process's user and system CPU time so far, all its threads (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_ticks(pid: int) -> tuple[int, dict[int, int]]:
    """CPU clock ticks so far of a process with those of the children it has reaped, and of
    each child still running."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    running: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            rest = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(rest[1]) == pid:
            running[int(stat.parent.name)] = int(rest[11]) + int(rest[12])
    return sum(int(v) for v in fields[11:15]), running


def _tree_seconds(before: tuple[int, dict[int, int]], after: tuple[int, dict[int, int]]) -> float:
    """CPU seconds a process and its children used between two :func:`_tree_ticks` readings:
    a child reaped in between adds its whole life to its parent's count, so what it had used
    at the first reading is taken off."""
    ticks = after[0] - before[0]
    ticks += sum(t - before[1].get(child, 0) for child, t in after[1].items())
    ticks -= sum(t for child, t in before[1].items() if child not in after[1])
    return ticks / os.sysconf("SC_CLK_TCK")


def _busy_seconds() -> float:
    """CPU time the whole machine spent busy so far, all cores (``/proc/stat``: all but idle
    and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def _cpu_split(follower: int, data: Path) -> dict[str, Any]:
    """CPU so far: the follower, the embedded PostgreSQL server (its postmaster and backends:
    the writes, the decoding of the slot, the read-back), this process (the writer threads) and
    the machine in all."""
    postmaster = int(next(data.rglob("postmaster.pid")).read_text().split()[0])
    return {
        "follower": _cpu_seconds(follower),
        "postgres": _tree_ticks(postmaster),
        "writers": _cpu_seconds(os.getpid()),
        "machine": _busy_seconds(),
    }


def _cores(before: dict[str, Any], after: dict[str, Any], seconds: float) -> dict[str, float]:
    """Cores each used on average between two :func:`_cpu_split` readings (``others``: the
    machine's busy time that none of them used)."""
    used = {k: (after[k] - before[k]) / seconds for k in before if k != "postgres"}
    used["postgres"] = _tree_seconds(before["postgres"], after["postgres"]) / seconds
    used["others"] = used["machine"] - used["follower"] - used["postgres"] - used["writers"]
    return {k: round(used[k], 2) for k in ("follower", "postgres", "writers", "others", "machine")}


class _Follower:
    """``vectorport sync SRC DST --delete --follow --json`` as a child process, its JSON events
    read as they come."""

    def __init__(self, src: str, dst: str, state: Path) -> None:
        cmd = [sys.executable, "-m", "vectorport", "sync", src, dst, "--delete", "--follow", "--json"]
        # a shell's background job ignores SIGINT, and so would the follower (Python installs its
        # KeyboardInterrupt handler only where SIGINT is not ignored): the stop below needs it
        self.proc = subprocess.Popen(
            [*cmd, "--state", str(state)],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.events: list[dict[str, Any]] = []
        self.reader = threading.Thread(
            target=lambda: self.events.extend(
                json.loads(line) for line in self.proc.stdout or [] if line.strip()
            )
        )
        self.reader.start()

    def lags(self, after: float = 0.0, until: float = float("inf")) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e.get("event") == "lag" and after <= e["time"] <= until]

    def wait_first_pass(self) -> None:
        while not self.lags():
            time.sleep(0.2)

    def wait_caught_up(self, since: float) -> float:
        """Seconds from ``since`` until a read after it found nothing left to apply."""
        while True:
            late = self.lags(after=since + 0.5)
            if late and late[-1]["behind"] == 0:
                return time.time() - since
            time.sleep(0.2)

    def stop(self) -> float:
        began = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # not left behind retrying against the server stopped after it
            self.proc.wait()
        self.reader.join(timeout=10)
        return round(time.monotonic() - began, 2)


def _write_load(
    src: str, n: int, dim: int, rate: int, seconds: float, writers: int
) -> tuple[float, float, int]:
    """``rate`` writes per second from ``writers`` threads: (start, end, writes)."""
    done: list[int] = []
    t0 = time.time()
    threads = [
        threading.Thread(target=_writer, args=(src, n, dim, rate // writers, seconds, done, w))
        for w in range(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return t0, time.time(), sum(done)


def _load_source(src: str, n: int, dim: int) -> None:
    with vectorport.connect(src, dimension=dim) as store:
        for start in range(0, n, BATCH):
            store.upsert(_records(start, min(n, start + BATCH), dim))
        store.setup_capture("slot")


def _follow_run(src: str, dst: str, root: Path, args: dict[str, Any]) -> dict[str, Any]:
    """The writes under a follower, and what it took: lags, CPU, cores."""
    data = root / "data"
    follower = _Follower(src, dst, root / "state.sqlite")
    follower.wait_first_pass()
    load0, cpu0 = os.getloadavg()[0], _cpu_seconds(follower.proc.pid)
    split0 = _cpu_split(follower.proc.pid, data)
    t0, t1, writes = _write_load(
        src, args["records"], args["dim"], args["rate"], args["seconds"], args["writers"]
    )
    split1 = _cpu_split(follower.proc.pid, data)
    caught_up = follower.wait_caught_up(t1)
    cpu = _cpu_seconds(follower.proc.pid) - cpu0
    split2 = _cpu_split(follower.proc.pid, data)
    load1 = os.getloadavg()[0]
    out: dict[str, Any] = {"stop_seconds": follower.stop()}
    # from the first write until caught up: a follower that falls behind shows it after t1
    readings = follower.lags(after=t0, until=t1 + caught_up)
    lags = sorted(e["lag_seconds"] for e in readings)
    out.update(
        writes=writes,
        write_rate=round(writes / (t1 - t0), 1),
        lag_p50=lags[len(lags) // 2] if lags else None,
        lag_p95=lags[int(len(lags) * 0.95)] if lags else None,
        lag_max=lags[-1] if lags else None,
        lag_samples=len(lags),
        caught_up_seconds=round(caught_up, 2),
        # the machine's 1-minute load average when the writes started and when caught up,
        # and the follower's CPU time (all its threads) in between, per 1,000 writes
        load_average=[round(load0, 2), round(load1, 2)],
        follower_cpu_seconds=round(cpu, 1),
        follower_cpu_per_1000_writes=round(cpu / writes * 1000, 2) if writes else None,
        # cores used on average while the writes ran and while the follower caught up after
        cores_while_writing=_cores(split0, split1, t1 - t0),
        cores_catching_up=_cores(split1, split2, max(caught_up, 1e-9)),
    )
    # each read of the slot: seconds since the first write, lag, changes read
    out["timeline"] = [[round(e["time"] - t0, 1), e["lag_seconds"], e["behind"]] for e in readings]
    return out


def follow(
    target_kind: str,
    n: int,
    dim: int,
    rate: int,
    seconds: float,
    index: str = "exact",
    writers: int = 2,
    timeline: bool = False,
    target_options: str = "",
) -> dict[str, Any]:
    """See the module docstring (``follow``)."""
    out: dict[str, Any] = {"target": target_kind, "records": n, "dim": dim, "rate": rate, "seconds": seconds}
    out.update(index=index, writers=writers, target_options=target_options)
    extra = "".join(f"&{option}" for option in target_options.split(",") if option)
    with h.workdir("follow-bench") as root, contextlib.ExitStack() as stack:
        # no HNSW index on the source: its maintenance, not the capture, would cap the write rate
        # on a small machine (about 130 writes/s on 2 shared cores); the target keeps its own index
        src = f"pgvector://{root / 'data'}?table=source&index={index}"
        if target_kind == "s3vectors":
            server = LocalServer()
            server.start()
            stack.callback(server.stop)
            dst = f"s3vectors://bench/follow?endpoint_url={server.url}{extra}"
        else:
            dst = f"chroma://{root / 'chroma'}?collection=follow{extra}"
        _load_source(src, n, dim)
        out.update(_follow_run(src, dst, root, out))
        if not timeline:
            del out["timeline"]
        check = vectorport.verify(src, dst, sample_queries=0)
        out["verified_equal"] = check.data_equal
        if not check.data_equal:
            out["verification"] = check.to_dict()
        with vectorport.connect(src) as store:
            store.teardown_capture()
    return out


def _change_in_place(snap: Any, n: int, dim: int, changes: int, version: int) -> None:
    """``changes`` changes through the parquet store: half updated, a quarter new, a quarter deleted."""
    half, quarter = changes // 2, changes // 4
    rng = np.random.default_rng(version)
    picked = sorted(int(i) for i in rng.choice(n, size=half + changes - half - quarter, replace=False))
    snap.upsert([_records(i, i + 1, dim, version=version)[0] for i in picked[:half]])
    snap.upsert(_records(n * version + n, n * version + n + quarter, dim))
    snap.delete([_records(i, i + 1, dim)[0].key for i in picked[half:]])


def _timed_sync(src: str, dst: str, state: Path) -> dict[str, Any]:
    t0 = time.monotonic()
    r = vectorport.sync(src, dst, state=state, delete=True)
    s = r.sync
    return {
        "seconds": round(time.monotonic() - t0, 3),
        "mode": s.mode,
        "bins": s.bins,
        "bins_read": s.bins_read,
        "source_read": s.source_read,
        "written": s.written,
        "deleted": s.deleted,
    }


def parquet_run(n: int, dim: int, changes: int, target: str) -> dict[str, Any]:
    """The ``parquet`` mode (see the module docstring)."""
    with h.workdir("sync-bench") as root:
        data = root / "data"
        dst = f"pgvector://{data}?table=target" if target == "pgvector" else "memory://sync-bench-target"
        out: dict[str, Any] = {"records": n, "dim": dim, "changes": changes, "target": target}
        try:
            mem = vectorport.connect("memory://sync-bench-source", dimension=dim)
            for start in range(0, n, BATCH):
                mem.upsert(_records(start, min(n, start + BATCH), dim))
            export("memory://sync-bench-source", root / "snap")
            mem.drop()
            src = snapshot_url(root / "snap")
            t0 = time.monotonic()
            report = vectorport.migrate.run(src, dst, checkpoint=root / "ck.json", sample_queries=0)
            out["migrate_seconds"] = round(time.monotonic() - t0, 2)
            assert report.status == "verified", report.status
            state = root / "sync.sqlite"
            out["first_sync"] = _timed_sync(src, dst, state)
            snap = vectorport.connect(src)
            _change_in_place(snap, n, dim, changes, version=1)
            out["bins_pass"] = _timed_sync(src, dst, state)
            manifest = root / "snap" / MANIFEST
            listed = json.loads(manifest.read_text())
            for part in listed["parts"]:
                part["bins"] = None  # as written before parts kept them: every record is scanned
            manifest.write_text(json.dumps(listed))
            _change_in_place(snap, n, dim, changes, version=2)
            out["full_scan_pass"] = _timed_sync(src, dst, state)
            check = vectorport.verify(src, dst, sample_queries=0)
            assert check.data_equal, check.to_dict()
            out["verified_equal"] = True
            b, f = out["bins_pass"], out["full_scan_pass"]
            out["bins_vs_full_scan"] = {
                "time": round(b["seconds"] / f["seconds"], 4),
                "source_read": round(b["source_read"] / f["source_read"], 4),
            }
            out["bins_pass_vs_migrate"] = round(b["seconds"] / out["migrate_seconds"], 4)
            return out
        finally:
            if target == "memory":
                vectorport.connect(dst).drop()


def parquet_main(argv: list[str]) -> None:
    ap = h.parser(__doc__, n=50_000, dim=128, quick={"n": 2000, "changes": 20}, prog="sync_bench.py parquet")
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--target", choices=["memory", "pgvector"], default="memory")
    args = h.parse(ap, argv)
    out = parquet_run(args.n, args.dim, args.changes, args.target)
    rows = [
        [
            name,
            *(
                out[name].get(k, "")
                for k in ("seconds", "mode", "bins", "bins_read", "source_read", "written", "deleted")
            ),
        ]
        for name in ("first_sync", "bins_pass", "full_scan_pass")
    ]
    text = h.table(
        ["pass", "seconds", "mode", "bins", "bins read", "source read", "written", "deleted"], rows
    )
    text += f"\nbins pass / full scan: {out['bins_vs_full_scan']}"
    text += f"; bins pass / migrate: {out['bins_pass_vs_migrate']}"
    h.emit("sync.parquet", args, out, text)


def follow_main(argv: list[str]) -> None:
    ap = h.parser(
        __doc__, n=10_000, dim=128, quick={"n": 2000, "seconds": 10, "rate": 200}, prog="sync_bench.py follow"
    )
    ap.add_argument("--target", choices=["s3vectors", "chroma"], default="s3vectors")
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--index", choices=["exact", "hnsw"], default="exact", help="the source's index")
    ap.add_argument("--writers", type=int, default=2, help="writer threads")
    ap.add_argument("--timeline", action="store_true", help="list every lag reading")
    ap.add_argument("--target-options", default="", help="name=value,… added to the target's URL")
    args = h.parse(ap, argv)
    out = follow(
        args.target,
        args.n,
        args.dim,
        args.rate,
        args.seconds,
        args.index,
        args.writers,
        args.timeline,
        args.target_options,
    )
    keys = (
        "writes",
        "write_rate",
        "lag_p50",
        "lag_p95",
        "lag_max",
        "lag_samples",
        "caught_up_seconds",
        "follower_cpu_per_1000_writes",
        "verified_equal",
    )
    rows = [[k, out.get(k)] for k in keys]
    rows += [[f"cores while writing: {k}", v] for k, v in out["cores_while_writing"].items()]
    h.emit(
        "sync.follow", args, out, f"sync --follow into {args.target}\n" + h.table(["figure", "value"], rows)
    )


def main() -> None:
    if sys.argv[1:2] == ["follow"]:
        follow_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["parquet"]:
        parquet_main(sys.argv[2:])
        return
    ap = h.parser(__doc__, n=200_000, dim=128, quick={"n": 5000, "capture_changes": 20, "changed": 0.01})
    ap.add_argument("--changed", type=float, default=0.001)
    ap.add_argument("--capture-changes", type=int, default=100)
    args = h.parse(ap)
    out = run(args.n, args.dim, args.changed, args.capture_changes)
    h.emit("sync", args, out, _table(out))


if __name__ == "__main__":
    main()
