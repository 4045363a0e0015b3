"""A sync after a small change against a full migration of the same collection, in one run.

    python benchmarks/sync_bench.py [--n 200000] [--dim 128] [--changed 0.001] [--json]

Source and target are tables of one embedded pgvector server. In order:

1. load the source (not timed);
2. ``vectorport.migrate`` source → target: plan, copy, HNSW build, verify;
3. the first ``vectorport.sync`` of the pair: a full pass that reads the target once and
   records what it holds (after a migrate it writes nothing);
4. change ``--changed`` of the source (half updated, a quarter new, a quarter deleted);
5. ``vectorport.sync --delete``: the incremental pass this benchmark is about;
6. ``vectorport.verify`` (not timed): the target must equal the source.

For each timed step: seconds, records read from the source and from the target, records
written and deleted. The migration's reads are counted from its report (plan and verify scan
the source, verify reads every target record); the sync's from its report.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import vectorport
from vectorport import Record

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


def run(n: int, dim: int, changed: float) -> dict[str, Any]:
    from vectorport.backends.pgvector._embedded import stop_embedded

    root = Path(tempfile.mkdtemp(prefix="vectorport-sync-bench-"))
    root.chmod(0o755)
    data = root / "data"
    src, dst = f"pgvector://{data}?table=source", f"pgvector://{data}?table=target"
    out: dict[str, Any] = {"records": n, "dim": dim, "changed_fraction": changed}
    try:
        store = vectorport.connect(src, dimension=dim)
        t0 = time.monotonic()
        for start in range(0, n, BATCH):
            store.upsert(_records(start, min(n, start + BATCH), dim))
        out["load_seconds"] = round(time.monotonic() - t0, 2)

        t0 = time.monotonic()
        report = vectorport.migrate(src, dst, checkpoint=root / "ck.json", sample_queries=20)
        seconds = time.monotonic() - t0
        assert report.status in ("verified", "quality"), report.status
        assert report.copy is not None and report.verification is not None
        out["migrate"] = {
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
                "segments": s.segments,
                "segments_checked": s.segments_checked,
            }
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
        store.close()
        return out
    finally:
        stop_embedded(data)
        shutil.rmtree(root, ignore_errors=True)


def _table(out: dict[str, Any]) -> str:
    rows = ["| step | seconds | source records read | target records read | written | deleted |"]
    rows.append("|---|---:|---:|---:|---:|---:|")
    for name in ("migrate", "first_sync", "sync"):
        r = out[name]
        label = {
            "migrate": "migrate (plan, copy, index, verify)",
            "first_sync": "first sync (full pass)",
        }.get(name, f"sync --delete after {out['changed_fraction']:.1%} changed")
        rows.append(
            f"| {label} | {r['seconds']:.1f} | {r['source_read']:,} | {r['target_read']:,} | "
            f"{r['written']:,} | {r['deleted']:,} |"
        )
    ratio = out["sync_vs_migrate"]
    rows.append("")
    rows.append(
        f"sync / migrate: time {ratio['time']:.1%}, target reads {ratio['target_read']:.1%}, "
        f"writes {ratio['written']:.2%} ({out['records']:,} records, {out['dim']} dims; the migrate's "
        f"index build took {out['migrate']['index_seconds']:.1f}s of it)"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--changed", type=float, default=0.001)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = run(args.n, args.dim, args.changed)
    print(json.dumps(out, indent=2) if args.json else _table(out))


if __name__ == "__main__":
    main()
