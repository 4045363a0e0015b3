"""Testing tools shipped with vectorport: the conformance kit, clustered data and the exact
oracle. Needs the ``dev`` extra (pytest, hypothesis) for the conformance kit."""

from .data import clustered_records, clustered_vectors, query_vectors
from .oracle import ExactIndex, Judgement, judge

__all__ = [
    "ExactIndex",
    "Judgement",
    "StoreConformance",
    "clustered_records",
    "clustered_vectors",
    "judge",
    "query_vectors",
]


def __getattr__(name: str) -> object:
    # The conformance kit imports pytest and hypothesis: load it only when asked for.
    if name == "StoreConformance":
        from .conformance import StoreConformance

        return StoreConformance
    raise AttributeError(name)
