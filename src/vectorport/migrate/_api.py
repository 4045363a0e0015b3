"""``plan()`` and ``verify()``: the library entry points beside :func:`~._engine.migrate`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._endpoints import StoreLike
from ._engine import LocalRunner, Runner, migrate, open_pair
from ._options import VerifyOptions, parse_shard
from ._plan import MigrationPlan, build_plan
from ._progress import ProgressMode
from ._report import DEFAULT_CAP
from ._transform import MetadataPolicy, Transformer
from ._verify import VerifyReport

__all__ = ["migrate", "parse_shard", "plan", "verify"]


def plan(
    source: StoreLike,
    target: StoreLike,
    *,
    metadata_policy: MetadataPolicy | str = MetadataPolicy.ERROR,
    text_key: str | None = None,
    shard: str | tuple[int, int] | None = None,
    cap: int = DEFAULT_CAP,
    progress: ProgressMode | bool = False,
    source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None,
) -> MigrationPlan:
    """The plan of a migration, without writing anything. See :func:`migrate`.

    >>> import vectorport
    >>> from vectorport.migrate import plan
    >>> src = vectorport.connect("memory://doctest-plan", dimension=2)
    >>> _ = src.upsert([vectorport.Record("a", [1, 0], {"author": {"name": "ada"}})])
    >>> p = plan("memory://doctest-plan", "memory://doctest-plan-dst")
    >>> p.records, p.refused, p.target_exists
    (1, False, False)
    >>> src.drop()
    """
    segment = parse_shard(shard)
    src, dst = open_pair(source, target, source_options, target_options)
    try:
        transformer = Transformer(dst.capabilities.metadata, metadata_policy, text_key)
        return build_plan(src, dst, transformer, shard=segment, cap=cap, progress=progress)
    finally:
        dst.close()
        src.close()


def verify(
    source: StoreLike, target: StoreLike, *, runner: Runner | None = None, **options: Any
) -> VerifyReport:
    """Compare ``target`` with ``source`` after the declared transforms; see :class:`VerifyReport`.

    ``options`` are the fields of :class:`~._options.VerifyOptions`: pass the
    ``metadata_policy`` and ``text_key`` the migration used, so the expected metadata is what
    that migration wrote; ``shard``, ``sample_queries``, ``k``, ``tolerance``, ``cap``,
    ``concurrency``, ``progress``, ``source_options``, ``target_options``. ``method``:
    ``digest`` (both stores read once, in parallel segments where the backend has them, then
    only differing key bins compared record by record), ``keyed`` (every source record fetched
    from the target by key) or ``auto`` (digest, except for shards and targets that may round
    metadata floats). ``runner``: where the reads run (default: threads in this process;
    :class:`vectorport.ray.RayRunner`: Ray tasks); an option it cannot honour is refused before
    any I/O.
    """
    opts = VerifyOptions(**options)
    run = runner if runner is not None else LocalRunner()
    run.check(opts, source, target)
    return run.compare(source, target, opts)
