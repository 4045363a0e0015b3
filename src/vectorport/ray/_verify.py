"""``verify --engine ray``: merged-digest verification (:mod:`vectorport.migrate._merged`) with
each store's native scan segments read by Ray tasks.

No task returns keys: a digest task returns its segment's per-key-bin digests and counts,
a detail task (run only for the key bins whose digests differ) the capped difference lists.
Every task only reads, so Ray may retry one whose worker died.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import ray

from .._registry import resolve
from .._url import StoreURL
from ..exceptions import ConfigurationError
from ..migrate._merged import MergedVerifyReport, Runner, verify_merged
from ..migrate._report import DEFAULT_CAP
from ..migrate._transform import MetadataPolicy
from ..migrate._verify import VECTOR_TOLERANCE

__all__ = ["ensure_ray", "ray_runner", "reachable", "verify_on_ray"]


def reachable(*urls: str) -> list[str]:
    """Refuse, before any I/O, a store no Ray worker can open (``memory://`` lives in this
    process); return the (masked) URLs of those only one process at a time may open (an
    embedded Chroma directory), as their backends say (:meth:`BaseStore.processes`)."""
    one = []
    for url in urls:
        parsed = StoreURL.parse(url)
        kind = resolve(parsed.scheme).load().processes(parsed)
        if kind == "this":
            raise ConfigurationError(
                f"{parsed.masked} lives in this process only and no Ray worker can read it; use a "
                "server or a shared directory (parquet://, chroma://, pgvector://, s3vectors://), "
                "or engine local"
            )
        if kind == "one":
            one.append(parsed.masked)
    return one


def ensure_ray(address: str | None) -> None:
    """Join the cluster at ``address`` (``"auto"``: the running one), or start a local one when
    Ray is not initialised and ``address`` is ``None``."""
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)


def ray_runner(max_retries: int = 3) -> Runner:
    """A :data:`~vectorport.migrate._merged.Runner` that runs every call as a Ray task and
    yields each result as its task finishes."""

    def run(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> Iterator[Any]:
        task = ray.remote(max_retries=max_retries, retry_exceptions=False)(fn)
        pending = [task.remote(*args) for args in calls]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])

    return run


def verify_on_ray(
    source: str,
    target: str,
    *,
    workers: int = 2,
    address: str | None = None,
    segments: int | None = None,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    sample_queries: int = 20,
    k: int = 10,
    tolerance: float = VECTOR_TOLERANCE,
    cap: int = DEFAULT_CAP,
    max_retries: int = 3,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> MergedVerifyReport:
    """Compare ``target`` with ``source`` (URLs) on a Ray cluster; the report of
    :func:`vectorport.verify` plus ``engine``, ``workers`` and each task's rate.

    Each store is read as ``segments`` native scan segments (default ``workers``), one Ray task
    each; pass the ``metadata_policy`` and ``text_key`` the migration used. Stores must be
    reachable from every worker (a server, a shared directory): ``memory://`` is not.
    """
    if workers < 1:
        raise ConfigurationError(f"workers must be at least 1, got {workers}")
    reachable(source, target)
    ensure_ray(address)
    return verify_merged(
        source,
        target,
        runner=ray_runner(max_retries),
        segments=segments or workers,
        workers=workers,
        engine="ray",
        metadata_policy=metadata_policy,
        text_key=text_key,
        sample_queries=sample_queries,
        k=k,
        tolerance=tolerance,
        cap=cap,
        source_options=source_options,
        target_options=target_options,
    )
