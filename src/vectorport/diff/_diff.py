"""``diff(SRC, DST)``: the keys whose records differ between two stores, from the digests.

The one verification (:func:`~vectorport.verify._placed.verify_placed`, under the runner's
placement) folds both stores into per-key-bin digests and compares only the bins that differ
record by record; ``diff`` keeps what that finds as key lists: ``missing`` (in the source, not
the target), ``extra`` (in the target, not the source) and ``changed`` (a vector, metadata or
text that differs), each capped at ``limit`` keys with an exact total. No query is sampled: a
diff is about the records, not search quality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .._exit import Status
from .._options import option
from .._report import Capped, Report
from ..engine._endpoints import StoreLike, open_pair
from ..engine._runner import LocalRunner, Runner
from ..engine._transform import Transformer
from ..exceptions import ConfigurationError
from ..verify._options import PairOptions, VerifyOptions
from ..verify._placed import Pair, verify_placed
from ..verify._verify import VerifyReport

__all__ = ["DiffOptions", "DiffReport", "diff"]


@dataclass(frozen=True)
class DiffOptions(PairOptions):
    """How :func:`diff` runs (its keyword arguments and ``vectorport diff`` flags): the options of
    the pair a verification takes, and how many keys to list."""

    COMMAND: ClassVar[str] = "diff"

    limit: int = option(1000, "Keys listed per kind (missing, extra, changed); totals are exact.", minimum=1)

    def verification(self) -> VerifyOptions:
        """The verification a diff runs: no sampled query (a diff is about the records), each
        kind of difference kept up to ``limit`` keys."""
        return VerifyOptions(**self.pair_options(), sample_queries=0, cap=self.limit)


@dataclass
class DiffReport(Report):
    """The keys that differ between a source and a target (``equal``: none do)."""

    SCHEMA: ClassVar[str] = "vectorport.diff/1"

    source: str
    target: str
    source_count: int | None = None
    target_count: int | None = None
    missing: Capped[str] = field(default_factory=Capped)
    """Keys in the source, not in the target."""
    extra: Capped[str] = field(default_factory=Capped)
    """Keys in the target, not in the source."""
    changed: Capped[str] = field(default_factory=Capped)
    """Keys in both whose vector, metadata or text differs (each key once)."""
    collection: list[str] = field(default_factory=list)
    """How the collections differ in what defines them (metric, dimension)."""
    engine: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def status(self) -> Status:
        differs = self.missing or self.extra or self.changed or self.collection
        return Status.DIFFERENCES if differs else Status.VERIFIED

    @classmethod
    def of(cls, v: VerifyReport, limit: int) -> DiffReport:
        """The key lists of a verification's differences."""
        report = cls(v.source, v.target, v.source_count, v.target_count, v.missing, v.extra)
        report.changed = Capped(limit)
        seen: set[str] = set()
        for kind in (v.vectors, v.metadata, v.text):
            for item in kind:
                key = str(item["key"])
                if key not in seen:
                    seen.add(key)
                    report.changed.add(key)
        # beyond the shown items a key may differ in more than one way: the largest kind is
        # the least the total can be, and exact whenever nothing was cut
        cut = any(len(kind.items) < kind.total for kind in (v.vectors, v.metadata, v.text))
        if cut:
            report.changed.total = max(report.changed.total, v.vectors.total, v.metadata.total, v.text.total)
        report.collection, report.seconds = list(v.collection), v.seconds
        return report

    def sections(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "source_count": self.source_count,
            "target_count": self.target_count,
            "missing": self.missing.to_dict(),
            "extra": self.extra.to_dict(),
            "changed": self.changed.to_dict(),
            "collection": list(self.collection),
            "seconds": round(self.seconds, 3),
            **self.engine,
        }


def diff(source: StoreLike, target: StoreLike, *, runner: Runner | None = None, **options: Any) -> DiffReport:
    """The keys whose records differ between ``source`` and ``target`` (URLs or stores).

    ``options`` are the fields of :class:`DiffOptions` (``metadata_policy`` and ``text_key`` as
    the migration used them, ``limit``, ``progress``). ``runner``: where the digest reads run
    (default: this process; :class:`vectorport.ray.RayRunner`: Ray tasks).

    >>> import vectorport
    >>> from vectorport.diff import diff
    >>> a = vectorport.connect("memory://doctest-diff-a", dimension=2)
    >>> b = vectorport.connect("memory://doctest-diff-b", dimension=2)
    >>> _ = a.upsert([vectorport.Record(k, [1.0, 0.0]) for k in ("x", "y", "z")])
    >>> _ = b.upsert([vectorport.Record("x", [1.0, 0.0]), vectorport.Record("y", [0.0, 1.0])])
    >>> r = diff("memory://doctest-diff-a", "memory://doctest-diff-b")
    >>> r.status, list(r.missing), list(r.extra), list(r.changed)
    (<Status.DIFFERENCES: 'differences'>, ['z'], [], ['y'])
    >>> a.drop(); b.drop()
    """
    o = DiffOptions(**options)
    run = runner if runner is not None else LocalRunner()
    placement = run.check(o, source, target)
    src, dst = open_pair(source, target, o.source_options, o.target_options)
    try:
        if not dst.exists:
            raise ConfigurationError(f"the target {dst.label} does not exist; nothing to compare")
        transformer = Transformer(dst.capabilities.metadata, o.metadata_policy, o.text_key)
        pair = Pair(source, target, src, dst, transformer)
        verification = verify_placed(run, placement, pair, o.verification(), progress=o.progress)
    finally:
        dst.close()
        src.close()
    report = DiffReport.of(verification, o.limit)
    report.engine = placement.describe()
    return report
