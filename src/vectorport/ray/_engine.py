"""``--engine ray``: :class:`RayRunner`, the runner that places a command's tasks on a Ray
cluster. Every stage of every command (options, checkpoints, plans, target creation, copies,
verification, status, notes, reports) is the command's own; the runner only places:

* ``map``: each call a Ray task (``max_retries``: Ray's retries of a task whose worker died),
  results yielded as the tasks finish. The commands split their work into shards of the
  source (``scan(segment=(i, n))``), one task each, so a retried task — or a later ``resume``
  — continues from its shard's last acknowledged batch; writes are idempotent upserts.
* ``delegate``: a store only one process may open (an embedded Chroma directory) is never opened
  by several workers: the whole command runs as one Ray task. That task forwards its progress
  through a Ray queue, and the driver shows it as the local runner would
  (:class:`~vectorport.engine._progress.Relay`).
* ``check``: a ``memory://`` store, which no other process can see, or a store object instead of
  a URL, is refused before any I/O, as is every option Ray cannot honour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import ray

from .._options import RunOptions
from .._registry import resolve
from .._url import StoreURL
from ..engine._endpoints import StoreLike
from ..engine._progress import ProgressEvent, ProgressMode, Relay, forwarded
from ..engine._runner import Placement, refuse_options
from ..exceptions import ConfigurationError

__all__ = ["RayRunner", "ensure_ray", "reachable"]

T = TypeVar("T")


class RayRunner:
    """Ray tasks: ``workers`` shards (and scan segments of a verification: ``segments``,
    default ``workers``). ``address`` goes to ``ray.init`` (``"auto"``: the running cluster;
    ``None``: a local one when Ray is not initialised yet); ``max_retries``: Ray's retries of
    a task whose worker died."""

    name = "ray"

    def __init__(
        self, workers: int = 2, address: str | None = None, max_retries: int = 3, segments: int | None = None
    ) -> None:
        if workers < 1:
            raise ConfigurationError(f"workers must be at least 1, got {workers}")
        if segments is not None and segments < 1:
            raise ConfigurationError(f"segments must be at least 1, got {segments}")
        self.workers, self.address, self.max_retries, self.segments = workers, address, max_retries, segments

    def check(self, options: RunOptions, source: StoreLike, target: StoreLike) -> Placement:
        refuse_options(options, self.name)
        if not (isinstance(source, str) and isinstance(target, str)):
            raise ConfigurationError(
                "engine ray opens the stores in its workers: pass URLs, not store objects "
                "(nothing was read or written)"
            )
        one = reachable(source, written=target) if options.WRITES_TARGET else reachable(source, target)
        return Placement(self.name, self.workers, remote=True, whole=tuple(one), segments=self.segments)

    def delegate(self, fn: Callable[..., T], args: tuple[Any, ...], progress: ProgressMode) -> T:
        ensure_ray(self.address)
        task: Any = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_forwarding)
        if not progress:
            return ray.get(task.remote(fn, args, None))  # type: ignore[no-any-return]
        from ray.util.queue import Queue  # Ray's actor-backed queue, only when progress is shown

        queue = Queue(actor_options={"num_cpus": 0})
        relay = Relay(progress)
        try:
            ref = task.remote(fn, args, queue)
            finished: list[Any] = []
            while not finished:
                finished, _ = ray.wait([ref], timeout=0.2)
                for event in queue.get_nowait_batch(queue.qsize()):  # all of them once it finished
                    relay.play(event)
            return ray.get(ref)  # type: ignore[no-any-return]
        finally:
            relay.close()
            queue.shutdown(force=True)

    def map(self, fn: Callable[..., T], calls: Sequence[tuple[Any, ...]]) -> Iterator[T]:
        ensure_ray(self.address)
        task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(fn)
        pending = [task.remote(*args) for args in calls]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])


def _forwarding(fn: Callable[..., T], args: tuple[Any, ...], queue: Any) -> T:
    """A delegated task: ``fn(*args)``; with a ``queue``, its progress goes there (for the
    driver to show) instead of to this worker's stderr."""
    if queue is None:
        return fn(*args)

    def sink(event: ProgressEvent) -> None:
        queue.put(event)

    with forwarded(sink):
        return fn(*args)


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
