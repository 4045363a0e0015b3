"""Move a chunk store from one backend to another without silent loss: plan, copy, verify.

>>> import vectorport
>>> src = vectorport.connect("memory://doctest-mig-pkg", dimension=2)
>>> _ = src.upsert([vectorport.Record("docs/a.md#chunk0", [1, 0], {"lang": "en"}, "hello")])
>>> report = vectorport.migrate.run("memory://doctest-mig-pkg", "memory://doctest-mig-pkg-copy")
>>> print(report.status, report.exit_code)
verified 0
>>> src.drop(); vectorport.connect("memory://doctest-mig-pkg-copy").drop()

``vectorport.migrate`` is this package; the migration itself is :func:`run`.

The pieces, one module each: :mod:`._plan` (what will happen, refused before any write when
lossy), :mod:`._transform` (metadata policies and ``text_key``), :mod:`._run` and
the shared :mod:`vectorport.engine` (the concurrent, resumable copy), :mod:`vectorport.verify`
(the comparison), :mod:`._report` (the JSON report and its exit code, from :class:`ExitCode`).
``sync``, ``verify`` and their reports are re-exported from :mod:`vectorport.sync` and
:mod:`vectorport.verify`. Everything uses only the public :class:`~vectorport.VectorStore`
protocol and the stores' declared capabilities.
"""

from .._exit import ExitCode
from ..engine._checkpoint import Checkpoint, shard_path
from ..engine._progress import ProgressMode
from ..engine._runner import LocalRunner, Runner
from ..engine._transform import Change, MetadataPolicy, Transformed, Transformer
from ..sync._options import SyncOptions
from ..sync._report import SyncReport, SyncStats
from ..sync._sync import sync
from ..verify._api import verify
from ..verify._verify import QueryCheck, VerifyReport
from ._api import migrate as run
from ._api import parse_shard, plan
from ._engine import RunContext
from ._options import MigrateOptions
from ._plan import MigrationPlan, PlanRefusedError, ProblemGroup
from ._records import CopyStats
from ._report import (
    EXIT_DIFFERENCES,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_REFUSED,
    Capped,
    MigrationReport,
)

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
