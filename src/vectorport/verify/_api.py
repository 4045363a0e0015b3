"""``verify()``: the standalone verification of two stores."""

from __future__ import annotations

from typing import Any

from ..engine._endpoints import StoreLike, open_pair
from ..engine._runner import LocalRunner, Runner
from ..engine._transform import Transformer
from ..exceptions import ConfigurationError
from ._options import VerifyOptions
from ._placed import Pair, verify_placed
from ._verify import VerifyReport

__all__ = ["verify"]


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
    o = VerifyOptions(**options)
    run = runner if runner is not None else LocalRunner()
    placement = run.check(o, source, target)
    src, dst = open_pair(source, target, o.source_options, o.target_options)
    try:
        if dst.naming is not None and dst.naming.refused:
            raise ConfigurationError(f"the target cannot exist: {dst.naming.reason()}")
        if not dst.exists:
            raise ConfigurationError(f"the target {dst.label} does not exist; nothing to verify")
        transformer = Transformer(dst.capabilities.metadata, o.metadata_policy, o.text_key)
        pair = Pair(source, target, src, dst, transformer, o.shard)
        return verify_placed(run, placement, pair, o, progress=o.progress)
    finally:
        dst.close()
        src.close()
