"""Exit codes: one table for every ``vectorport`` command and for the library's reports.

====  ===========  ==============================================================================
code  name         meaning
====  ===========  ==============================================================================
0     ``OK``       done; every check passed
1     ``PROBLEM``  a check found a problem: a ``compare`` gate failed, ``migrate``/``verify``
                   found differences, ``doctor`` has findings, ``ingest`` could not read some
                   files (the rest was ingested)
2     ``USAGE``    bad arguments, URL, filter, option or input file, an embedder whose model is
                   not the collection's (typer's own usage errors, e.g. an unknown flag, too)
3     ``FAILURE``  operational failure: a backend or an embedder failed or could not be reached;
                   ``migrate``/``verify`` also exit 3 for a bad URL, option or checkpoint
4     ``REFUSED``  ``migrate``'s plan was refused: nothing was written; the output says why and
                   which flag to pass
5     ``QUALITY``  ``migrate``/``sync``/``verify``: the data is equal, but the target's search
                   quality on the sampled queries is below both the source's and its declared
                   recall against exact truth
====  ===========  ==============================================================================
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """The process exit codes of the CLI (see the module docstring for the table)."""

    OK = 0
    PROBLEM = 1
    USAGE = 2
    FAILURE = 3
    REFUSED = 4
    QUALITY = 5
