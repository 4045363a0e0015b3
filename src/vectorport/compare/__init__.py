"""The comparison harness: the same queries against N stores, judged by exact search.

>>> import vectorport
>>> from vectorport.compare import Query, Gates, GroundTruth  # the building blocks

``vectorport.compare(stores, queries, k=…)`` (this package's :func:`compare`) returns a
:class:`ComparisonResult`; ``vectorport compare URL URL …`` and the pytest plugin
(:mod:`vectorport.testing.plugin`) wrap it. See ``docs/compare.md``.

Modules: ``_queries`` (the query set), ``_truth`` (exact ground truth), ``_metrics`` (the
figures), ``_gates`` (thresholds and failure diffs), ``_options`` (the run's options, from
which the keyword arguments and the CLI's flags derive), ``_runner`` (timed runs), ``_result``
(the result and its JSON), ``_html`` (the offline HTML report), ``_table`` (terminal tables),
``_modes`` (retrieval quality per search mode and fusion weight: :func:`compare_modes`).
"""

from ._gates import GateFailure, GateResult, Gates
from ._metrics import (
    Figures,
    Latency,
    Outcome,
    PairFigures,
    Relevance,
    Status,
    hit_at_k,
    ndcg_at_k,
    overlap_at_k,
    rank_biased_overlap,
    reciprocal_rank,
)
from ._modes import MODES, ModeComparison, ModeFigures, compare_modes
from ._options import CompareOptions
from ._queries import Embedder, Query, QueryEmbedder, load_queries, sample_queries
from ._result import ComparisonResult, PairReport, StoreReport
from ._runner import compare
from ._truth import FilterGroup, GroundTruth, TruthTable

__all__ = [
    "MODES",
    "CompareOptions",
    "ComparisonResult",
    "Embedder",
    "Figures",
    "FilterGroup",
    "GateFailure",
    "GateResult",
    "Gates",
    "GroundTruth",
    "Latency",
    "ModeComparison",
    "ModeFigures",
    "Outcome",
    "PairFigures",
    "PairReport",
    "Query",
    "QueryEmbedder",
    "Relevance",
    "Status",
    "StoreReport",
    "TruthTable",
    "compare",
    "compare_modes",
    "hit_at_k",
    "load_queries",
    "ndcg_at_k",
    "overlap_at_k",
    "rank_biased_overlap",
    "reciprocal_rank",
    "sample_queries",
]
