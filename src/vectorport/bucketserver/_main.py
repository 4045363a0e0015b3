"""Command-line entry shared by ``python -m vectorport.bucketserver`` and ``vectorport bucket serve``."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from typing import Any

from ._core import Limits
from ._http import Throttle
from ._local import LocalServer

__all__ = ["main", "serve"]


def serve(
    data: str | None,
    host: str = "127.0.0.1",
    port: int = 8080,
    *,
    supabase_key: str | None = None,
    throttle_fraction: float = 0.0,
    throttle_rps: float | None = None,
    write_rate: float | None = None,
    max_top_k: int = Limits.max_top_k,
    region: str = "us-east-1",
    as_json: bool = False,
    snapshot_bytes: int = 64 << 20,
) -> None:
    """Serve until SIGINT/SIGTERM. Prints the endpoint URL on stdout when ready (one JSON
    line with ``as_json``), so callers using ``--port 0`` can read the chosen port."""
    throttle = Throttle(fraction=throttle_fraction, rate=throttle_rps)
    limits = Limits(max_top_k=max_top_k, write_rate=write_rate)
    server = LocalServer(
        data,
        host=host,
        port=port,
        supabase_key=supabase_key,
        throttle=throttle,
        limits=limits,
        region=region,
        snapshot_bytes=snapshot_bytes,
    )
    stopping = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if as_json:
        doc = {"schema": "vectorport.bucket-serve/1", "endpoint_url": server.url, "data": data}
        print(json.dumps(doc), flush=True)
    else:
        print(server.url, flush=True)
    print(
        f"vectorport: S3 Vectors API on {server.url} (Supabase route {server.url}/storage/v1/vector/), "
        f"data: {data or 'in memory'}",
        file=sys.stderr,
        flush=True,
    )
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vectorport.bucketserver")
    parser.add_argument("--data", help="durable data directory (default: in memory)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--supabase-key", help="require this Bearer key on /storage/v1/vector/*")
    parser.add_argument("--throttle-fraction", type=float, default=0.0)
    parser.add_argument("--throttle-rps", type=float)
    parser.add_argument("--write-rate", type=float, help="vectors/s per index before 429 (AWS: 2500)")
    parser.add_argument("--max-top-k", type=int, default=Limits().max_top_k)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument(
        "--snapshot-bytes", type=int, default=64 << 20, help="log size that triggers a snapshot"
    )
    parser.add_argument("--json", action="store_true", help="print the endpoint as one JSON line")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    serve(
        args.data,
        args.host,
        args.port,
        supabase_key=args.supabase_key,
        throttle_fraction=args.throttle_fraction,
        throttle_rps=args.throttle_rps,
        write_rate=args.write_rate,
        max_top_k=args.max_top_k,
        region=args.region,
        as_json=args.json,
        snapshot_bytes=args.snapshot_bytes,
    )
    return 0
