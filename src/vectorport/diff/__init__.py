"""``vectorport diff SRC DST``: the keys that differ between two stores (missing, extra,
changed), from the digests of the one verification."""

from ._diff import DiffOptions, DiffReport, diff

__all__ = ["DiffOptions", "DiffReport", "diff"]
