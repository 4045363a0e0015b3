"""``vectorport bucket serve``: the local S3-Vectors-compatible server.

Exit codes (:class:`vectorport._exit.ExitCode`): 0 after a clean stop (SIGINT/SIGTERM), 2 for
bad options or a missing driver.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from .._exit import ExitCode
from .._paths import writable_dir
from ..exceptions import ConfigurationError
from ._common import JsonOption, err_console, print_error

DEFAULT_MAX_TOP_K = 10_000
"""The server's own default (``bucketserver._core.Limits.max_top_k``, checked by a test): AWS's
limit since June 2026, which the s3vectors adapter declares too."""

__all__ = ["register"]

bucket_app = typer.Typer(help="Vector buckets: a local S3 Vectors / Supabase-compatible server.")


Data = Annotated[Path | None, typer.Option("--data", help="Directory for durable data (default: memory).")]
Host = Annotated[str, typer.Option("--host", help="Interface to listen on.")]
Port = Annotated[
    int, typer.Option("--port", min=0, max=65535, help="TCP port; 0 picks a free one (printed on stdout).")
]
SupabaseKey = Annotated[
    str | None,
    typer.Option(
        "--supabase-key",
        envvar="VECTORPORT_SUPABASE_KEY",
        show_envvar=False,
        help="Require 'Authorization: Bearer KEY' on the Supabase route.",
    ),
]
ThrottleFraction = Annotated[
    float,
    typer.Option("--throttle-fraction", min=0.0, max=1.0, help="Answer this fraction of requests with 429."),
]
ThrottleRps = Annotated[
    float | None,
    typer.Option("--throttle-rps", min=0.001, help="Answer 429 beyond this many requests per second."),
]
WriteRate = Annotated[
    float | None,
    typer.Option(
        "--write-rate", min=0.001, help="Vectors written+deleted per second per index before 429 (AWS: 2500)."
    ),
]
MaxTopK = Annotated[
    int,
    typer.Option(
        "--max-top-k",
        min=1,
        help="Largest topK accepted (AWS: 10,000, in pages of 100; 100 emulates the older limit).",
    ),
]
Region = Annotated[str, typer.Option("--region", help="Region shown in ARNs.")]


@bucket_app.command("serve")
def serve(
    data: Data = None,
    host: Host = "127.0.0.1",
    port: Port = 8080,
    supabase_key: SupabaseKey = None,
    throttle_fraction: ThrottleFraction = 0.0,
    throttle_rps: ThrottleRps = None,
    write_rate: WriteRate = None,
    max_top_k: MaxTopK = DEFAULT_MAX_TOP_K,
    region: Region = "us-east-1",
    as_json: bool = JsonOption,
) -> None:
    """Serve the S3 Vectors REST-JSON API (boto3, AWS CLI) and the Supabase route until stopped.

    Prints the endpoint URL on stdout once listening (a JSON line with --json); logs go to stderr.
    The Supabase key can also come from the environment variable VECTORPORT_SUPABASE_KEY.
    """
    if importlib.util.find_spec("botocore") is None:
        err_console.print("[red]error:[/red] the server needs botocore: pip install 'vectorport[s3vectors]'")
        raise typer.Exit(ExitCode.USAGE)
    from ..bucketserver import serve as run

    if data is not None:
        try:
            writable_dir(data, "bucket server data directory (--data)")
        except ConfigurationError as exc:
            print_error(exc)
            raise typer.Exit(ExitCode.USAGE) from None
    try:
        run(
            None if data is None else str(data),
            host,
            port,
            supabase_key=supabase_key,
            throttle_fraction=throttle_fraction,
            throttle_rps=throttle_rps,
            write_rate=write_rate,
            max_top_k=max_top_k,
            region=region,
            as_json=as_json,
        )
    except OSError as exc:
        raise typer.Exit(_cannot_serve(exc, data, host, port)) from None


def _cannot_serve(exc: OSError, data: Path | None, host: str, port: int) -> ExitCode:
    """Say why the server could not start: a file of the data directory, or the listening
    socket (a busy or forbidden port, an unknown host)."""
    why = exc.strerror or str(exc)
    if exc.filename is not None:
        err_console.print(
            f"[red]error:[/red] cannot use the data directory {data}: {why} ({exc.filename}); "
            "choose another --data"
        )
    else:
        err_console.print(
            f"[red]error:[/red] cannot listen on {host}:{port}: {why}; choose another --port "
            "(0 picks a free one) or --host"
        )
    return ExitCode.USAGE


def register(app: typer.Typer) -> None:
    """Add the ``bucket`` command group."""
    app.add_typer(bucket_app, name="bucket")
