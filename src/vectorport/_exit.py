"""Outcomes and exit codes: one vocabulary for every ``vectorport`` command and the library's reports.

A report's :class:`Status` says what happened; :data:`EXIT_CODES` is the one table that maps a
status to the process exit code (:class:`ExitCode`). Operational failures are exceptions, not
statuses: the CLI exits 3 for them (2 for a bad command line).

====  ===========  =================================================  ==============================
code  name         meaning                                            statuses
====  ===========  =================================================  ==============================
0     ``OK``       done; every check passed                           ``planned`` ``copied``
                                                                      ``verified`` ``synced``
                                                                      ``exported`` ``ingested``
                                                                      ``healthy`` ``passed``
                                                                      ``applied``
1     ``PROBLEM``  a check found a problem: a ``compare`` gate        ``differences``
                   failed, ``migrate``/``verify`` found differences,  ``unwritable`` ``findings``
                   ``sync`` could not write some records, ``doctor``  ``failed`` ``partial``
                   has findings, ``ingest`` could not read some
                   files (the rest was ingested)
2     ``USAGE``    bad arguments, URL, filter, option or input file,
                   an embedder whose model is not the collection's
                   (typer's own usage errors, e.g. an unknown flag)
3     ``FAILURE``  operational failure: a backend or an embedder
                   failed or could not be reached (the same for every
                   command; a bad URL, option or checkpoint is 2)
4     ``REFUSED``  ``migrate``'s plan was refused: nothing was        ``refused``
                   written; the output says why and which flag to
                   pass. ``alias switch``: a gate failed, nothing
                   changed; the output names each failed gate
5     ``QUALITY``  ``migrate``/``sync``/``verify``: the data is       ``quality``
                   equal, but the target's search quality on the
                   sampled queries is below both the source's and
                   its declared recall against exact truth
130   ``INTER…``   interrupted (Ctrl-C); ``migrate`` and ``sync``
                   print the command that resumes (``INTERRUPTED``)
====  ===========  =================================================  ==============================

>>> Status.DIFFERENCES.exit_code
<ExitCode.PROBLEM: 1>
>>> Status("verified") == "verified", int(Status.REFUSED.exit_code)
(True, 4)
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum, StrEnum
from types import MappingProxyType

__all__ = ["EXIT_CODES", "ExitCode", "Status"]


class ExitCode(IntEnum):
    """The process exit codes of the CLI (see the module docstring for the table)."""

    OK = 0
    PROBLEM = 1
    USAGE = 2
    FAILURE = 3
    REFUSED = 4
    QUALITY = 5
    INTERRUPTED = 130
    """Ctrl-C (128 + SIGINT, as shells report it)."""


class Status(StrEnum):
    """What a run of a command concluded; a ``str``, so it compares equal to its value and is
    its own JSON. :attr:`exit_code` comes from the one table, :data:`EXIT_CODES`."""

    PLANNED = "planned"
    """``migrate --plan``: the plan was accepted; nothing was written."""
    COPIED = "copied"
    """``migrate --no-verify``: copied, not verified."""
    VERIFIED = "verified"
    """Copied, synced or exported, and verified equal (search quality included)."""
    SYNCED = "synced"
    """``sync`` without verification: the target brought to the source's state."""
    EXPORTED = "exported"
    """``export`` without verification."""
    INGESTED = "ingested"
    """``ingest``: every file read."""
    HEALTHY = "healthy"
    """``doctor``: no findings."""
    PASSED = "passed"
    """``compare``: every gate passed."""
    DIFFERENCES = "differences"
    """Verification found data differences (missing, extra or changed records)."""
    UNWRITABLE = "unwritable"
    """``sync``: some source records could not be written (the rest was synced)."""
    FINDINGS = "findings"
    """``doctor`` found problems."""
    FAILED = "failed"
    """``compare``: a gate failed."""
    PARTIAL = "partial"
    """``ingest``: some files could not be read (the rest was ingested)."""
    REFUSED = "refused"
    """The plan was refused: nothing was written."""
    QUALITY = "quality"
    """The data is equal, but search quality on the sampled queries is below the bar."""
    APPLIED = "applied"
    """``alias``: the change was made (created, shadowing, switched, rolled back, retired)."""

    @property
    def exit_code(self) -> ExitCode:
        """This status's exit code, from :data:`EXIT_CODES`."""
        return EXIT_CODES[self]


EXIT_CODES: Mapping[Status, ExitCode] = MappingProxyType(
    {
        Status.PLANNED: ExitCode.OK,
        Status.COPIED: ExitCode.OK,
        Status.VERIFIED: ExitCode.OK,
        Status.SYNCED: ExitCode.OK,
        Status.EXPORTED: ExitCode.OK,
        Status.INGESTED: ExitCode.OK,
        Status.HEALTHY: ExitCode.OK,
        Status.PASSED: ExitCode.OK,
        Status.APPLIED: ExitCode.OK,
        Status.DIFFERENCES: ExitCode.PROBLEM,
        Status.UNWRITABLE: ExitCode.PROBLEM,
        Status.FINDINGS: ExitCode.PROBLEM,
        Status.FAILED: ExitCode.PROBLEM,
        Status.PARTIAL: ExitCode.PROBLEM,
        Status.REFUSED: ExitCode.REFUSED,
        Status.QUALITY: ExitCode.QUALITY,
    }
)
"""The one status → exit-code table (every :class:`Status` is in it; a test checks)."""
