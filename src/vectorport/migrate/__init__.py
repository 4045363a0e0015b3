"""Move a chunk store from one backend to another without silent loss: plan, copy, verify.

>>> import vectorport
>>> src = vectorport.connect("memory://doctest-mig-pkg", dimension=2)
>>> _ = src.upsert([vectorport.Record("docs/a.md#chunk0", [1, 0], {"lang": "en"}, "hello")])
>>> report = vectorport.migrate.run("memory://doctest-mig-pkg", "memory://doctest-mig-pkg-copy")
>>> print(report.status, report.exit_code)
verified 0
>>> src.drop(); vectorport.connect("memory://doctest-mig-pkg-copy").drop()

``vectorport.migrate`` is this module; the migration itself is :func:`run` (calling the module,
``vectorport.migrate.run(...)``, still works and warns: it is deprecated).

The pieces, one module each: :mod:`._plan` (what will happen, refused before any write when
lossy), :mod:`._transform` (metadata policies and ``text_key``), :mod:`._run` and
:mod:`._checkpoint` (the concurrent, resumable copy), :mod:`._verify` (the comparison),
:mod:`._report` (the JSON report and its exit code, from :class:`ExitCode`), and ``sync`` —
keeping a live source and its copy in step — in :mod:`._sync`, :mod:`._syncstate`,
:mod:`._digest` and :mod:`._syncreport`. Everything uses only the public
:class:`~vectorport.VectorStore` protocol and the stores' declared capabilities.
"""

import sys
import types
import warnings
from typing import Any

from .._exit import ExitCode
from ._api import migrate as run
from ._api import parse_shard, plan, verify
from ._checkpoint import Checkpoint, shard_path
from ._engine import LocalRunner, RunContext, Runner
from ._options import MigrateOptions, SyncOptions
from ._plan import MigrationPlan, PlanRefusedError, ProblemGroup
from ._progress import ProgressMode
from ._report import (
    EXIT_DIFFERENCES,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_REFUSED,
    Capped,
    MigrationReport,
)
from ._run import CopyStats
from ._sync import sync
from ._syncreport import SyncReport, SyncStats
from ._transform import Change, MetadataPolicy, Transformed, Transformer
from ._verify import QueryCheck, VerifyReport

__all__ = [
    "EXIT_DIFFERENCES",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_REFUSED",
    "Capped",
    "Change",
    "Checkpoint",
    "CopyStats",
    "ExitCode",
    "LocalRunner",
    "MetadataPolicy",
    "MigrateOptions",
    "MigrationPlan",
    "MigrationReport",
    "PlanRefusedError",
    "ProblemGroup",
    "ProgressMode",
    "QueryCheck",
    "RunContext",
    "Runner",
    "SyncOptions",
    "SyncReport",
    "SyncStats",
    "Transformed",
    "Transformer",
    "VerifyReport",
    "parse_shard",
    "plan",
    "run",
    "shard_path",
    "sync",
    "verify",
]


_DEPRECATED = (
    "calling vectorport.migrate(...) or vectorport.migrate.migrate is deprecated: "
    "call vectorport.migrate.run(...)"
)


class _MigrateModule(types.ModuleType):
    """``vectorport.migrate`` once was the function: calling the module still runs it, with a
    :class:`DeprecationWarning`."""

    def __call__(self, *args: Any, **kwargs: Any) -> MigrationReport:
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        return run(*args, **kwargs)


def __getattr__(name: str) -> Any:
    if name == "migrate":  # the function's old name in this module
        warnings.warn(_DEPRECATED, DeprecationWarning, stacklevel=2)
        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


sys.modules[__name__].__class__ = _MigrateModule
