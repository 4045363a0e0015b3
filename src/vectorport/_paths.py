"""Files vectorport writes for the user (checkpoints, sync state, reports, snapshot directories):
checked before any work, so a path that cannot be written is one clear error at the start, not a
traceback after an hour of copying.

>>> import tempfile, pathlib
>>> writable_file(pathlib.Path(tempfile.mkdtemp()) / "sub" / "ck.json", "checkpoint").name
'ck.json'
>>> writable_file(pathlib.Path("/proc/nope/ck.json"), "checkpoint")
Traceback (most recent call last):
...
vectorport.exceptions.ConfigurationError: cannot write the checkpoint /proc/nope/ck.json: ...
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .exceptions import ConfigurationError

__all__ = ["default_state", "pair_file", "state_dir", "unwritable", "writable_dir", "writable_file"]


def unwritable(
    what: str, path: Path, exc: OSError | None = None, where: Path | None = None
) -> ConfigurationError:
    """The error for a ``what`` (``"checkpoint"``, ``"report"`` …) that cannot be written at
    ``path`` (because of its directory ``where``, when given)."""
    why = f"{exc.strerror or exc}" if exc is not None else "permission denied"
    if where is not None:
        why = f"{why} ({where})"
    return ConfigurationError(f"cannot write the {what} {path}: {why}; choose a path you can write")


def writable_dir(path: Path, what: str, file: Path | None = None) -> Path:
    """``path`` as a directory that exists (created with its parents) and can be written (the
    directory of ``file``, when given: errors then name the file)."""
    shown, where = (file, path) if file is not None else (path, None)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigurationError(
            f"cannot write the {what} {shown}: {path} is a file, not a directory"
        ) from None
    except OSError as exc:
        raise unwritable(what, shown, exc, where) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise unwritable(what, shown, None, where)
    return path


def writable_file(path: Path, what: str) -> Path:
    """``path`` when a file can be written there: its directory exists (created when missing)
    and may be written, and ``path`` is not a directory. Writes no file."""
    writable_dir(path.parent, what, path)
    if path.is_dir():
        raise ConfigurationError(f"cannot write the {what} {path}: it is a directory; name a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise unwritable(what, path)
    return path


def state_dir() -> Path:
    """``$VECTORPORT_STATE_DIR``, else ``$XDG_STATE_HOME/vectorport``, else
    ``~/.local/state/vectorport``: where the command line keeps migrations' checkpoints and
    syncs' states when it is not given a path."""
    base = os.environ.get("VECTORPORT_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "vectorport"
    )
    return Path(base)


def default_state(source: str, target: str) -> Path:
    """A sync's state file when none is given (``vectorport.sync`` without ``state=``, the command
    without ``--state``): :func:`state_dir` ``/syncs/<hash of the two URLs>.sqlite`` (a shard's
    beside it, :func:`~vectorport.migrate.shard_path`), so that every pass of the same two stores
    continues the same record of what the target holds."""
    return pair_file("syncs", source, target, ".sqlite")


def pair_file(kind: str, source: str, target: str, suffix: str) -> Path:
    """:func:`state_dir` ``/<kind>/<hash of the two URLs><suffix>``: one file per pair of stores."""
    digest = hashlib.sha256(f"{source}\n{target}".encode()).hexdigest()[:16]
    return state_dir() / kind / f"{digest}{suffix}"
