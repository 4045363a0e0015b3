"""``verify --engine ray``: merged-digest verification (:mod:`vectorport.migrate._merged`) with
each store's native scan segments read by Ray tasks (:meth:`RayRunner.compare
<vectorport.ray.RayRunner.compare>`, the runner of :func:`vectorport.migrate.verify`).

No task returns keys: a digest task returns its segment's per-key-bin digests and counts,
a detail task (run only for the key bins whose digests differ) the capped difference lists.
Every task only reads, so Ray may retry one whose worker died.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import ray

from .._registry import resolve
from .._url import StoreURL
from ..exceptions import ConfigurationError
from ..migrate._merged import MergedVerifyReport, Runner

__all__ = ["ensure_ray", "ray_runner", "reachable", "verify_on_ray"]


def reachable(*urls: str, written: str | None = None) -> list[str]:
    """Refuse, before any I/O, a store no Ray worker can open (``memory://`` lives in this
    process); return the (masked) URLs of those only one process at a time may open (an
    embedded Chroma directory; a ``parquet://`` directory when it is ``written``, a target the
    command writes), as their backends say (:meth:`BaseStore.processes`)."""
    one = []
    for url, writes in [*((u, False) for u in urls), *([(written, True)] if written is not None else [])]:
        parsed = StoreURL.parse(url)
        kind = resolve(parsed.scheme).load().processes(parsed, writes=writes)
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
    max_retries: int = 3,
    **options: Any,
) -> MergedVerifyReport:
    """:func:`vectorport.migrate.verify` with its reads run as Ray tasks (:class:`RayRunner`);
    ``options`` are the same keyword arguments, meaning the same (what Ray cannot honour, such
    as ``shard``, is refused before any I/O). The report adds ``engine``, ``workers`` and each
    task's rate.

    Each store is read as ``segments`` native scan segments (default ``workers``), one Ray task
    each. Stores must be reachable from every worker (a server, a shared directory):
    ``memory://`` is not.
    """
    from ..migrate import verify
    from ._engine import RayRunner

    report = verify(source, target, runner=RayRunner(workers, address, max_retries, segments), **options)
    assert isinstance(report, MergedVerifyReport)  # the Ray runner's verification is merged
    return report
