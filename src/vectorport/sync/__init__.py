"""``vectorport sync``: keep a live source and its new home in step until the cut-over.

A pass reads the source (a scan, or a captured change feed: :mod:`._capture`), writes what is new
or changed through the one acknowledged-write pipeline (:mod:`vectorport.engine`) and records
what the target acknowledged in the sync state (:mod:`._state`); :mod:`._report` is its report.
"""

from ._options import SyncOptions
from ._report import SyncReport, SyncStats
from ._sync import sync

__all__ = ["SyncOptions", "SyncReport", "SyncStats", "sync"]
