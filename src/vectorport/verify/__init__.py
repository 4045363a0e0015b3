"""``vectorport verify``: compare a target with its source — counts, key sets, vectors at float32
tolerance, metadata and text, and the search quality of sampled queries.

One digest verification: each store's records are folded into per-key-bin digests, and only the
key bins whose digests differ are compared record by record. Both steps are tasks
(:mod:`._tasks`) that a runner maps — threads of this process, or Ray tasks —, judged by one set
of rules (:mod:`._judge`). One driver (:func:`._verify.verify_stores`) runs them, in this
process (threads over the opened stores, using what the copy knows: its digests, its
read-back; and the keyed method for targets that round floats, shards, re-embedded vectors) or
across a placement's tasks, each opening the stores by URL (:mod:`._merged`: its entry and
report); :mod:`._placed` chooses.
"""

from ._api import verify
from ._options import VerifyOptions
from ._verify import QueryCheck, VerifyReport

__all__ = ["QueryCheck", "VerifyOptions", "VerifyReport", "verify"]
