"""Read-only ``parquet://DIR`` stores over snapshots written by ``vectorport export``."""

from .store import ParquetStore

__all__ = ["ParquetStore"]
