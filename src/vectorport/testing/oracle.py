"""The exact reference the conformance kit judges stores against. The search and the judging
rule live in vectorport's core (``vectorport._exact``, ``vectorport._judge``), shared with the
memory store, the bucket server, the migration verifier and the comparison harness; they are
re-exported here for backend authors' tests.
"""

from __future__ import annotations

from .._exact import ExactIndex, SearchMatrix, StreamingTopK, TopK
from .._judge import TIE_EPSILON, Judgement, judge, tie_tolerance

__all__ = [
    "TIE_EPSILON",
    "ExactIndex",
    "Judgement",
    "SearchMatrix",
    "StreamingTopK",
    "TopK",
    "judge",
    "tie_tolerance",
]
