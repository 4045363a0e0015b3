"""``vectorport verify``: compare a target with its source — counts, key sets, vectors at float32
tolerance, metadata and text, and the search quality of sampled queries.

One digest verification: each store's records are folded into per-key-bin digests, and only the
key bins whose digests differ are compared record by record (:mod:`._merged` for the segment
tasks a runner places, :mod:`._verify` for the report and the record-by-record comparison).
"""

from ._api import verify
from ._options import VerifyOptions
from ._verify import QueryCheck, VerifyReport

__all__ = ["QueryCheck", "VerifyOptions", "VerifyReport", "verify"]
