"""What every benchmark shares: its options, ways timed side by side, logs, tables and JSON.

A benchmark builds its parser with :func:`parser` (``--n``, ``--dim``, ``--repeat``/``--rounds``,
``--json``, ``--output``, ``--quick`` and its own options), times the ways it compares with a
:class:`Race` (named callables run in alternating order, round after round, so a machine's
changing load falls on every way alike; medians, percentiles and ratios against the named
baseline), logs progress with :func:`log` (stderr) and ends with :func:`emit`: a table on stdout,
or with ``--json`` the figures as one JSON document on stdout (the table then on stderr), with
``--output FILE`` the JSON written to FILE as well. Every document carries
``"schema": "vectorport.bench.<name>/1"`` and the machine it ran on (CPUs, load average).

Ratios: ``speed`` (the default) is baseline time / way time, so above 1 the way is faster than
the baseline; ``time`` is way time / baseline time, the form latency overheads are quoted in.

The helpers below are the setups several benchmarks need: a scratch directory that stops the
embedded PostgreSQL servers started in it, the local bucket server in a process of its own,
records every target accepts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vectorport._registry import resolve
from vectorport.backends.pgvector import stop_embedded
from vectorport.testing import clustered_records

SCHEMA_VERSION = 1
_STARTED = time.monotonic()


# ----------------------------------------------------------------------------- options
def parser(
    doc: str | None,
    *,
    n: int | None,
    dim: int = 384,
    repeat: int = 1,
    quick: dict[str, Any] | None = None,
    prog: str | None = None,
) -> argparse.ArgumentParser:
    """The common options with this benchmark's defaults. ``quick``: the values ``--quick``
    puts in place of the defaults (options given on the command line still win)."""
    ap = argparse.ArgumentParser(
        prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    if n is not None:  # None: the benchmark takes its sizes otherwise
        ap.add_argument("--n", type=int, default=n, help=f"records (default {n:,})")
    ap.add_argument("--dim", type=int, default=dim, help=f"vector dimension (default {dim})")
    ap.add_argument(
        "--repeat", "--rounds", dest="repeat", type=int, default=repeat, help="timed rounds (median reported)"
    )
    ap.add_argument("--json", action="store_true", help="the figures as JSON on stdout, the table on stderr")
    ap.add_argument("--output", type=Path, help="also write the JSON figures to this file")
    quick = quick or {"n": 1000}
    ap.add_argument("--quick", action="store_true", help=f"smoke-test sizes: {quick} (given options win)")
    ap.set_defaults(_quick=quick)
    return ap


def parse(ap: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse, with the ``--quick`` values in place of the defaults when it is given."""
    args = ap.parse_args(argv)
    if args.quick:
        ap.set_defaults(**args._quick)
        args = ap.parse_args(argv)
    return args


def csv(text: str) -> list[str]:
    """A comma-separated option as a list, empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def sizes(text: str) -> list[int]:
    return [int(item.replace("_", "")) for item in csv(text)]


# ----------------------------------------------------------------------------- logs and output
def log(message: str) -> None:
    """Progress, on stderr, with the seconds since the benchmark started."""
    print(f"[{time.monotonic() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in os.getloadavg()]}


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table; floats with two decimals, ints with thousands separators."""

    def cell(value: Any) -> str:
        if isinstance(value, bool) or value is None:
            return str(value)
        if isinstance(value, int):
            return f"{value:,}"
        if isinstance(value, float):
            return f"{value:,.2f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def emit(name: str, args: argparse.Namespace, figures: dict[str, Any], text: str) -> None:
    """The end of a run: ``figures`` as JSON (``--json``: stdout, ``--output``: a file) with the
    schema and machine fields, ``text`` (the table) on stdout, or on stderr under ``--json``."""
    hidden = {"json", "output", "quick", "_quick"}
    options = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in hidden}
    doc = {
        "schema": f"vectorport.bench.{name}/{SCHEMA_VERSION}",
        "machine": machine(),
        "options": options,
        **figures,
    }
    encoded = json.dumps(doc, indent=2, default=str)
    if args.output:
        args.output.write_text(encoded + "\n")
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)
    if args.json:
        print(encoded, flush=True)


# ----------------------------------------------------------------------------- ways side by side
@dataclass(frozen=True)
class Timed:
    """What a way returns when the seconds to count are not its wall time (a report's own
    total, one phase of it), with anything to keep beside them."""

    seconds: float
    detail: Any = None


def timed(fn: Callable[[], Any]) -> Timed:
    """``fn()`` timed alone (a way that prepares its input first returns this)."""
    began = time.perf_counter()
    got = fn()
    return Timed(time.perf_counter() - began, got)


Way = Callable[[int], Any]
"""One way of doing the thing measured, called with the round number."""


@dataclass
class Race:
    """Named ways timed side by side: each round runs every way once, the order turned by one
    each round (two ways: alternating which goes first). ``results`` keeps what each call
    returned (the ``detail`` of a :class:`Timed`)."""

    baseline: str
    ways: dict[str, Way]
    ratio: Literal["speed", "time"] = "speed"
    seconds: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    results: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.baseline not in self.ways:
            raise ValueError(f"baseline {self.baseline!r} is not one of the ways {list(self.ways)}")
        for name in self.ways:
            self.seconds.setdefault(name, [])
            self.cpu.setdefault(name, [])
            self.results.setdefault(name, [])

    def run(self, rounds: int, *, warmup: int = 0, quiet: bool = True) -> Race:
        """``warmup`` untimed rounds first (connections, caches, prepared statements)."""
        names = list(self.ways)
        for r in range(warmup):
            for name in names:
                self.ways[name](-1 - r)
        for r in range(rounds):
            turn = r % len(names)
            for name in names[turn:] + names[:turn]:
                if not quiet:
                    log(f"round {r + 1}/{rounds}: {name} …")
                self.once(name, r)
        return self

    def once(self, name: str, r: int) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        got = self.ways[name](r)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if isinstance(got, Timed):
            wall, got = got.seconds, got.detail
        self.seconds[name].append(wall)
        self.cpu[name].append(cpu)
        self.results[name].append(got)
        return got

    def median(self, name: str) -> float:
        return statistics.median(self.seconds[name])

    def percentile_ms(self, name: str, p: float) -> float:
        return percentile_ms(self.seconds[name], p)

    def ratio_of(self, a: float, b: float) -> float:
        """``a`` a way's figure, ``b`` the baseline's, both times."""
        return b / a if self.ratio == "speed" else a / b

    def ratios(self, p: float = 50) -> dict[str, float]:
        """Each way's ratio to the baseline at the ``p`` percentile of its times (50: medians)."""
        base = np.percentile(self.seconds[self.baseline], p)
        return {
            name: round(self.ratio_of(float(np.percentile(s, p)), float(base)), 3)
            for name, s in self.seconds.items()
            if name != self.baseline
        }

    def round_ratios(self) -> dict[str, list[float]]:
        """Each way's ratio to the baseline round by round (same round, same machine state)."""
        base = self.seconds[self.baseline]
        return {
            name: [round(self.ratio_of(s, b), 3) for s, b in zip(times, base, strict=False)]
            for name, times in self.seconds.items()
            if name != self.baseline
        }

    def summary(self) -> dict[str, Any]:
        """Medians per way, the ratios of medians and the median of the per-round ratios."""
        per_round = self.round_ratios()
        return {
            "baseline": self.baseline,
            "ratio": "baseline time / way time" if self.ratio == "speed" else "way time / baseline time",
            "rounds": len(self.seconds[self.baseline]),
            "median_s": {name: round(self.median(name), 4) for name in self.ways},
            "ratio_of_medians": self.ratios(),
            "median_round_ratio": {n: round(statistics.median(v), 3) for n, v in per_round.items() if v},
            "round_ratios": per_round,
        }


# ----------------------------------------------------------------------------- small figures
def percentile_ms(seconds: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(seconds) * 1000.0, p))


def rate(n: int, seconds: float) -> float:
    """Records per second, rounded; 0 for no time at all."""
    return round(n / seconds) if seconds > 0 else 0.0


# ----------------------------------------------------------------------------- setups
@contextlib.contextmanager
def workdir(prefix: str) -> Iterator[Path]:
    """A scratch directory readable by the embedded server's user (it runs as another user
    when the benchmark runs as root); on exit every embedded PostgreSQL server whose data
    directory lies inside is stopped and the directory removed."""
    root = Path(tempfile.mkdtemp(prefix=f"vectorport-{prefix}-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        for pid_file in root.rglob("postmaster.pid"):
            with contextlib.suppress(Exception):
                stop_embedded(pid_file.parent)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def bucket_server(*options: str) -> Iterator[str]:
    """The local S3 Vectors server in a process of its own (in memory unless ``--data`` is
    among ``options``); yields its endpoint URL."""
    cmd = [sys.executable, "-m", "vectorport.bucketserver", "--port", "0", *options]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(30)


def upsert_all(store: Any, records: Sequence[Any], batch: int = 5000) -> None:
    """Load ``records`` into an open store, ``batch`` a call (a setup: not what is timed)."""
    for start in range(0, len(records), batch):
        store.upsert(records[start : start + batch])


def portable_records(n: int, dim: int, seed: int = 1, **options: Any) -> list[Any]:
    """Clustered records (uniform random vectors defeat any HNSW graph, so a verification's
    query check would fail on data no one embeds) with metadata every target accepts."""
    rules = resolve("s3vectors").load().capabilities.metadata
    return clustered_records(n, dim, seed=seed, rules=rules, **options)
