"""How the test suites put records into a read-only ``parquet://`` store: by the route users
take, ``vectorport export`` of a collection holding them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ..._models import Record
from ..._registry import connect
from ..._url import StoreURL

__all__ = ["seed"]

_names = itertools.count()


def seed(url: str, dimension: int, metric: str, records: Sequence[Record]) -> None:
    """Make the snapshot at ``url`` hold exactly ``records`` (an empty one for none), replacing
    what it held: the records are written to a memory collection and exported."""
    from ...snapshot import export
    from .store import ParquetStore

    directory = ParquetStore.from_url(StoreURL.parse(url)).directory
    staging = f"memory://parquet-seed-{next(_names)}-{directory.name}"
    with connect(staging, dimension=dimension, metric=metric) as store:
        try:
            if records:
                store.upsert(list(records))
            export(staging, directory, overwrite=True, verify=False)
        finally:
            store.drop()
