"""vectorport: one protocol over Chroma, pgvector and S3-style vector buckets, and tools to
move chunk stores between them without silent damage.

>>> import vectorport
>>> store = vectorport.connect("memory://readme", dimension=2)
>>> store.upsert([vectorport.Record("docs/a.md#chunk0", [1.0, 0.0], {"lang": "en"}, "hi")])
1
>>> store.query([1.0, 0.1], k=1, filter={"lang": "en"}).keys
['docs/a.md#chunk0']
>>> store.drop()
"""

from . import migrate
from ._async import AsyncStore
from ._base import BaseStore
from ._capabilities import Capabilities, MetadataRules
from ._embedder import Embedder
from ._features import Feature, SupportsHybridSearch, SupportsTextSearch, hybrid_search_of, text_search_of
from ._models import CollectionSpec, Include, Match, Metric, QueryResult, Record, ScanPage
from ._names import NameRule
from ._protocol import VectorStore
from ._registry import aconnect, available_backends, connect
from ._retry import RetryPolicy
from ._url import StoreURL, mask_url
from ._validate import Batch
from .compare import ComparisonResult, compare
from .exceptions import (
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    ConflictError,
    FilterError,
    InvalidNameError,
    NotFoundError,
    NotInstalledError,
    TransientError,
    UnsupportedError,
    UnsupportedFeatureError,
    UnsupportedFilterError,
    ValidationError,
    VectorportError,
)
from .migrate import MigrationReport, SyncReport, sync, verify

__version__ = "0.1.0"

__all__ = [
    "AsyncStore",
    "BackendError",
    "BackendUnavailableError",
    "BaseStore",
    "Batch",
    "Capabilities",
    "CollectionSpec",
    "ComparisonResult",
    "ConfigurationError",
    "ConflictError",
    "Embedder",
    "Feature",
    "FilterError",
    "Include",
    "InvalidNameError",
    "Match",
    "MetadataRules",
    "Metric",
    "MigrationReport",
    "NameRule",
    "NotFoundError",
    "NotInstalledError",
    "QueryResult",
    "Record",
    "RetryPolicy",
    "ScanPage",
    "StoreURL",
    "SupportsHybridSearch",
    "SupportsTextSearch",
    "SyncReport",
    "TransientError",
    "UnsupportedError",
    "UnsupportedFeatureError",
    "UnsupportedFilterError",
    "ValidationError",
    "VectorStore",
    "VectorportError",
    "__version__",
    "aconnect",
    "available_backends",
    "compare",
    "connect",
    "hybrid_search_of",
    "mask_url",
    "migrate",
    "sync",
    "text_search_of",
    "verify",
]
