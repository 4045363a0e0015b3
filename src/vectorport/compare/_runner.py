"""Run one query set against N stores: warm-up, timed queries (optionally concurrent), judged
against the exact truth; then the figures per store, per filter and per pair of stores."""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import itertools
import logging
import math
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .._judge import judge
from .._models import QueryResult
from .._protocol import VectorStore
from .._registry import available_backends, connect
from ..exceptions import ConfigurationError, UnsupportedError
from ..filters import FilterNode
from ._gates import Gates
from ._metrics import Outcome, PairFigures, Relevance, Status, pair_figures, relevance_of, summarize
from ._options import CompareOptions
from ._queries import Query, QueryEmbedder, QueryLike, embed_queries, normalize_queries, sample_queries
from ._records import RecordCheck, check_records, of_truth
from ._result import ComparisonResult, PairReport, StoreReport
from ._truth import GroundTruth, TruthTable

__all__ = ["compare", "describe_store", "time_queries"]

log = logging.getLogger("vectorport.compare")

FilterArg = Mapping[str, Any] | FilterNode | None
StoreArg = VectorStore | str


def compare(
    stores: Sequence[StoreArg] | Mapping[str, StoreArg],
    queries: Iterable[QueryLike] | npt.NDArray[Any] | int,
    k: int = 10,
    *,
    truth: StoreArg | GroundTruth | None = None,
    filter: FilterArg | Sequence[FilterArg] = None,
    embedder: QueryEmbedder | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    gates: Gates | None = None,
    **options: Any,
) -> ComparisonResult:
    """Run the same queries against every store and judge each answer against exact search.

    Parameters
    ----------
    stores
        Stores or URLs (opened here and closed afterwards); a mapping gives them labels (default: the
        backend name, numbered when repeated).
    queries
        :class:`Query` objects, dicts in the JSONL format (``vector``/``text``, ``filter``, ``relevant``,
        ``id``), a (n, dim) array, or an ``int`` N: N query vectors drawn from the truth's data.
    k
        Results per query.
    truth
        Where the exact truth comes from: a store or URL to scan, or a prepared :class:`GroundTruth`.
        Default: a scan of the first store.
    filter
        A filter for queries that have none; a list of filters (``None`` in it: unfiltered) with an
        ``int`` ``queries`` samples N queries for each.
    embedder
        For text queries: a :class:`vectorport.Embedder` or any ``embedder(texts) -> (n, dim) array``.
    params
        Per store label, backend query parameters (``{"pg": {"ef_search": 200}}``).
    gates
        A prepared :class:`Gates` (e.g. with ``per_filter=False``), instead of the gate options.
    options
        The fields of :class:`~vectorport.compare.CompareOptions`, each documented there: the gates
        (``min_recall``, ``max_missing`` (default 0: a lost record fails the store), …; the result's
        ``passed`` and ``gate_results`` report them), ``concurrency``, ``warmup``, ``eps``, ``seed``, ….

    Examples
    --------
    >>> import vectorport
    >>> from vectorport.testing import clustered_records
    >>> a, b = (vectorport.connect(f"memory://doctest-cmp-{n}", dimension=8) for n in "ab")
    >>> _ = a.upsert(clustered_records(200, 8)), b.upsert(clustered_records(200, 8))
    >>> result = vectorport.compare({"a": a, "b": b}, 20, k=5, filter=[None, {"lang": "en"}],
    ...                             min_recall=0.99, min_overlap=0.99)
    >>> result.passed, result.store("b").overall.recall
    (True, 1.0)
    >>> a.drop(); b.drop()
    """
    with _Run(CompareOptions(k=k, **options)) as run:
        handles = [(label, run.open(item)) for label, item in _label(stores)]
        ground, truth_store = run.ground_truth(truth, handles[0][1])
        _check_specs(handles, ground)
        basis = run.queries(queries, filter, embedder, ground, truth_store)
        reports = [run.measure(label, store, basis, params) for label, store in handles]
        return run.result(basis, reports).check(gates or run.opts.gates())


@dataclass(frozen=True)
class _Basis:
    """What every store is judged against: the exact truth (and the store it was scanned from,
    ``None`` when it was given), the queries and their exact answers."""

    ground: GroundTruth
    truth_store: VectorStore | None
    queries: list[Query]
    table: TruthTable


class _Run:
    """One comparison as it goes: its options, the stores it opened (closed at the end) and the
    time each step took."""

    def __init__(self, opts: CompareOptions) -> None:
        self.opts = opts
        self.started = time.perf_counter()
        self.started_at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        self.opened: list[VectorStore] = []
        self.timings: dict[str, float] = {}
        self.raw_sum = 0.0
        self.judge_time = 0.0

    def __enter__(self) -> _Run:
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the stores the run opened from URLs."""
        for store in self.opened:
            store.close()

    def open(self, item: StoreArg) -> VectorStore:
        """A store as given, or opened from its URL (and closed when the run ends)."""
        if not isinstance(item, str):
            return item
        store = connect(item)
        self.opened.append(store)
        return store

    def ground_truth(
        self, truth: StoreArg | GroundTruth | None, first: VectorStore
    ) -> tuple[GroundTruth, VectorStore | None]:
        """The exact truth, and the store it was scanned from (``None``: it was given)."""
        t0 = time.perf_counter()
        if isinstance(truth, GroundTruth):
            ground, truth_store = truth, None
        else:
            truth_store = first if truth is None else self.open(truth)
            ground = GroundTruth.from_store(truth_store)
        self.timings["scan"] = time.perf_counter() - t0
        return ground, truth_store

    def queries(
        self,
        queries: Iterable[QueryLike] | npt.NDArray[Any] | int,
        filter: FilterArg | Sequence[FilterArg],
        embedder: QueryEmbedder | None,
        ground: GroundTruth,
        truth_store: VectorStore | None,
    ) -> _Basis:
        """The queries (sampled or given, embedded when they are text) and their exact answers."""
        qs = _resolve_queries(queries, filter, ground, self.opts.seed)
        t0 = time.perf_counter()
        qs = embed_queries(qs, embedder)
        self.timings["embed"] = time.perf_counter() - t0
        if not qs:
            raise ConfigurationError("compare needs at least one query")
        table = ground.solve(qs, self.opts.k)
        self.timings["truth"] = table.seconds
        return _Basis(ground, truth_store, qs, table)

    def measure(
        self,
        label: str,
        store: VectorStore,
        basis: _Basis,
        params: Mapping[str, Mapping[str, Any]] | None,
    ) -> StoreReport:
        """One store: its records against the truth's, the timed queries, each answer judged."""
        o, qs, table = self.opts, basis.queries, basis.table
        t0 = time.perf_counter()
        records = _records_of(store, basis.truth_store, basis.ground)
        self.timings[f"keys:{label}"] = time.perf_counter() - t0
        store_params = dict((params or {}).get(label, {}))
        answers, latencies, wall, warm = time_queries(
            store, qs, o.k, concurrency=o.concurrency, warmup=o.warmup, params=store_params, include=o.include
        )
        self.raw_sum += float(np.nansum(latencies)) + warm
        self.timings[f"queries:{label}"] = wall
        t0 = time.perf_counter()
        outcomes = _judge_all(basis.ground, table, qs, answers, latencies, o.k, o.eps)
        self.judge_time += time.perf_counter() - t0
        answered = sum(out.status is Status.OK for out in outcomes)
        qps = answered / wall if wall > 0 and answered else None
        overall = summarize(outcomes, o.k, distance_tol=o.distance_tol, qps=qps)
        by_filter = {
            g.label: summarize([outcomes[i] for i in g.queries], o.k, distance_tol=o.distance_tol)
            for g in table.groups
        }
        log.info("compare: %s recall@%d %.4f, p50 %.2f ms", label, o.k, overall.recall, overall.latency.p50)
        description = describe_store(store, store_params)
        return StoreReport(
            label, store.name, str(store.url), overall, by_filter, tuple(outcomes), description, records
        )

    def result(self, basis: _Basis, reports: Sequence[StoreReport]) -> ComparisonResult:
        """The figures per pair of stores, the truth's own relevance, the run's configuration."""
        k, p = self.opts.k, self.opts.rbo_p
        ground, table, qs = basis.ground, basis.table, basis.queries
        pairs = [
            PairReport(
                a.label,
                b.label,
                pair_figures(a.outcomes, b.outcomes, k, p=p),
                _pair_groups(a, b, table, k, p),
            )
            for a, b in itertools.combinations(reports, 2)
        ]
        truth_rel = Relevance.of(
            [relevance_of(table.keys(ground.index, i), q.gains, k) for i, q in enumerate(qs)]
        )
        self.timings["judge"] = self.judge_time
        self.timings["query_time_sum"] = self.raw_sum
        self.timings["total"] = time.perf_counter() - self.started
        return ComparisonResult(
            k=k,
            queries=tuple(qs),
            groups=table.groups,
            stores=tuple(reports),
            pairs=tuple(pairs),
            truth=ground,
            table=table,
            truth_relevance=truth_rel,
            config=self.config(basis, reports),
            timings=self.timings,
        )

    def config(self, basis: _Basis, reports: Sequence[StoreReport]) -> dict[str, Any]:
        """What the report says about the run: the options, the truth, versions, the stores."""
        o, ground, table, qs = self.opts, basis.ground, basis.table, basis.queries
        return {
            "started_at": self.started_at,
            "k": o.k,
            "queries": len(qs),
            "filters": [g.label for g in table.groups],
            "labelled_queries": sum(bool(q.gains) for q in qs),
            "truth": {
                "source": ground.source,
                "records": len(ground),
                "dimension": ground.dimension,
                "metric": ground.metric.value,
            },
            "concurrency": o.concurrency,
            "warmup": o.warmup,
            "include": list(o.include) if o.include is not None else None,
            "eps": o.eps,
            "distance_tol": o.distance_tol,
            "rbo_p": o.rbo_p,
            "seed": o.seed,
            "vectorport": _version("vectorport"),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "numpy": np.__version__,
            "stores": [
                {"label": r.label, "backend": r.backend, "url": r.url, **r.description} for r in reports
            ],
        }


def _check_specs(handles: Sequence[tuple[str, VectorStore]], ground: GroundTruth) -> None:
    """Every store must hold vectors of the truth's dimension and metric."""
    for label, store in handles:
        spec = store.spec
        if spec.dimension != ground.dimension or spec.metric is not ground.metric:
            raise ConfigurationError(
                f"store {label!r} ({store.url}) is {spec.dimension}-d {spec.metric.value}; the truth "
                f"({ground.source}) is {ground.dimension}-d {ground.metric.value}"
            )


def _records_of(store: VectorStore, truth_store: VectorStore | None, ground: GroundTruth) -> RecordCheck:
    """The store's records against the truth's (no second scan of the truth's own store)."""
    if truth_store is not None and (store is truth_store or str(store.url) == str(truth_store.url)):
        return of_truth(ground)
    return check_records(store, ground)


def _label(stores: Sequence[StoreArg] | Mapping[str, StoreArg]) -> list[tuple[str, StoreArg]]:
    """Each store with its label: the mapping's, else its backend's name (numbered when repeated)."""
    if isinstance(stores, str):
        stores = [stores]
    if len(stores) == 0:
        raise ConfigurationError("compare needs at least one store")
    if isinstance(stores, Mapping):
        return [(str(label), item) for label, item in stores.items()]
    names = []
    for item in stores:
        if isinstance(item, str):
            scheme = item.split("://", 1)[0].lower()
            names.append(next((b.name for b in available_backends() if scheme in b.schemes), scheme))
        else:
            names.append(item.name)
    out = []
    for i, (name, item) in enumerate(zip(names, stores, strict=True)):
        label = name if names.count(name) == 1 else f"{name}#{names[:i].count(name) + 1}"
        out.append((label, item))
    return out


def _resolve_queries(
    queries: Iterable[QueryLike] | npt.NDArray[Any] | int,
    filter: FilterArg | Sequence[FilterArg],
    ground: GroundTruth,
    seed: int,
) -> list[Query]:
    filters: list[FilterArg] = (
        [cast(FilterArg, f) for f in filter]
        if isinstance(filter, list | tuple)
        else [cast(FilterArg, filter)]
    )
    if isinstance(queries, bool):
        raise ConfigurationError("queries must be queries, vectors or a sample size, not a bool")
    if isinstance(queries, int):
        keys = [str(key) for key in ground.index.keys]
        return sample_queries(ground.index.vectors, queries, filters=filters, seed=seed, keys=keys)
    if len(filters) != 1:
        raise ConfigurationError("a list of filters needs an int of queries to sample; pass one filter")
    qs = normalize_queries(queries)
    default = filters[0]
    if default is None:
        return qs
    return [
        q if q.where is not None else Query(q.vector, q.text, default, q.relevant, q.id, q.origin) for q in qs
    ]


Answer = QueryResult | BaseException


def time_queries(
    store: VectorStore,
    queries: Sequence[Query],
    k: int,
    *,
    concurrency: int = 1,
    warmup: int = 10,
    params: Mapping[str, Any] | None = None,
    include: Sequence[str] | None = None,
) -> tuple[list[Answer], npt.NDArray[np.float64], float, float]:
    """Issue every query to ``store`` after ``warmup`` untimed ones.

    Returns the answers (a :class:`QueryResult` or the exception raised), each query's latency
    in seconds (NaN for failures), the wall time of the timed phase and the time spent warming up.
    """
    call_params = dict(params or {})

    def one(q: Query) -> tuple[Answer, float]:
        t = time.perf_counter()
        try:
            res: Answer = store.query(q.vector, k, filter=q.where, include=include, params=call_params)
        except Exception as exc:  # the failure is part of the result, reported per query
            return exc, math.nan
        return res, time.perf_counter() - t

    t0 = time.perf_counter()
    for q in itertools.islice(itertools.cycle(queries), min(warmup, max(warmup, 0))):
        one(q)
    warm = time.perf_counter() - t0
    run: Callable[[Query], tuple[Answer, float]] = one
    t0 = time.perf_counter()
    if concurrency == 1:
        pairs = [run(q) for q in queries]
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vectorport-compare") as pool:
            pairs = list(pool.map(run, queries))
    wall = time.perf_counter() - t0
    answers = [a for a, _ in pairs]
    latencies = np.asarray([lat for _, lat in pairs], dtype=np.float64)
    return answers, latencies, wall, warm


def _judge_all(
    ground: GroundTruth,
    table: TruthTable,
    queries: Sequence[Query],
    answers: Sequence[Answer],
    latencies: npt.NDArray[np.float64],
    k: int,
    eps: float,
) -> list[Outcome]:
    index = ground.index
    label_of = [q.filter_label for q in queries]
    out: list[Outcome] = []
    for i, (q, ans) in enumerate(zip(queries, answers, strict=True)):
        if isinstance(ans, BaseException):
            status = Status.REFUSED if isinstance(ans, UnsupportedError) else Status.ERROR
            out.append(Outcome(i, status, error=f"{type(ans).__name__}: {ans}"))
            continue
        j = judge(
            index,
            np.asarray(q.vector, dtype=np.float32),
            ans,
            q.where,
            eps,
            mask=table.masks[label_of[i]],
            truth=(table.keys(index, i), table.distances(i)),
        )
        out.append(
            Outcome(
                i,
                Status.OK,
                tuple(ans.keys),
                tuple(float(m.distance) for m in ans),
                float(latencies[i]),
                j,
                relevance=relevance_of(ans.keys, q.gains, k),
            )
        )
    return out


def _pair_groups(
    a: StoreReport, b: StoreReport, table: TruthTable, k: int, p: float
) -> dict[str, PairFigures]:
    return {
        g.label: pair_figures([a.outcomes[i] for i in g.queries], [b.outcomes[i] for i in g.queries], k, p=p)
        for g in table.groups
    }


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    # slow (reads every installed distribution's metadata): only for modules named unlike
    # their distribution
    return importlib.metadata.packages_distributions()


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def describe_store(store: VectorStore, params: Mapping[str, Any]) -> dict[str, Any]:
    """What a report says about a store: driver versions, collection info (which backends may
    extend with server version and index parameters), capabilities and query params."""
    versions: dict[str, str | None] = {}
    info_entry = next((b for b in available_backends() if b.name == store.name), None)
    for module in info_entry.requires if info_entry is not None else ():
        found = _version(module)
        if found is not None:
            versions[module] = found
            continue
        for dist in _distributions().get(module, [module]):
            versions[dist] = _version(dist)
    try:
        info = dict(store.info())
    except Exception as exc:  # a report must not fail because a backend cannot describe itself
        info = {"error": f"{type(exc).__name__}: {exc}"}
    capabilities = info.pop("capabilities", None) or store.capabilities.summary()
    info.pop("url", None)
    return {
        "versions": versions,
        "info": info,
        "capabilities": capabilities,
        "params": dict(params),
    }
