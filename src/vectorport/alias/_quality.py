"""Quality on labelled queries: each member answers the same texts, embedded by its own model,
scored by the relevance labels (nDCG@k, MRR, hit@k — :mod:`vectorport.compare._metrics`, the
measures ``vectorport compare --queries`` reports). When the candidate's model is another one
this, not the overlap with the served answers, says whether it is better.

The queries file is ``vectorport compare``'s JSONL (``{"text": …, "relevant": [keys…],
"filter": …}``); every query needs its text (each member embeds it) and labels.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from .._protocol import VectorStore
from ..compare._metrics import Relevance, relevance_of
from ..compare._queries import Query, load_queries
from ..exceptions import ConfigurationError
from ._embedding import Embedders
from ._model import AliasState, Member
from ._registry import QualityRow

__all__ = ["K", "labelled", "measured", "quality", "ratio_detail"]

K = 10
"""The depth of nDCG@k and hit@k."""


def labelled(path: str | Path) -> list[Query]:
    """The labelled queries of ``path``; each must carry its text and relevance labels."""
    queries = load_queries(path)
    bad = [q.describe(i) for i, q in enumerate(queries) if not q.text or not q.gains]
    if bad or not queries:
        raise ConfigurationError(
            f"{path}: every query needs its text and relevance labels to judge a model "
            f"({len(bad)} without: {', '.join(bad[:3])})"
            if bad
            else f"{path}: no queries"
        )
    return queries


def quality(store: VectorStore, member: Member, queries: list[Query], embedders: Embedders) -> Relevance:
    """``member``'s nDCG@k, MRR and hit@k on ``queries``, each embedded by its own model."""
    vectors = embedders.of(member).embed_queries([q.text or "" for q in queries])
    triples = [
        relevance_of(store.query(v, K, filter=q.where, include=[]).keys, q.gains, K)
        for q, v in zip(queries, vectors, strict=True)
    ]
    figures = Relevance.of(triples)
    assert figures is not None  # every query is labelled (labelled())
    return figures


def ratio_detail(candidate: Relevance, serving: Relevance, models: tuple[str, str]) -> tuple[float, str]:
    """The candidate's nDCG@k over the serving store's, and the line that shows both."""
    ratio = candidate.ndcg / serving.ndcg if serving.ndcg > 0 else math.inf
    return ratio, (
        f"nDCG@{K} {candidate.ndcg:.3f} ({models[0]}) / {serving.ndcg:.3f} ({models[1]}) = {ratio:.2f} "
        f"on {candidate.queries} labelled queries; MRR {candidate.mrr:.3f} / {serving.mrr:.3f}, "
        f"hit@{K} {candidate.hit:.3f} / {serving.hit:.3f}"
    )


def measured(state: AliasState, figures: dict[str, Relevance]) -> list[QualityRow]:
    """What the registry keeps of a measurement made now (``figures`` by member label): each
    member's figures in its model (``status --report`` shows the newest of each)."""
    now = time.time()
    return [
        QualityRow(m.label, m.embedding_model, now, q.queries, q.ndcg, q.mrr, q.hit)
        for m in state.members
        if (q := figures.get(m.label)) is not None
    ]
