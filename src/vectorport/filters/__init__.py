"""The portable metadata filter language: parse, evaluate (the oracle), compile per backend.

>>> from vectorport.filters import parse_filter, evaluate
>>> f = parse_filter({"lang": {"$in": ["py", "ts"]}, "stars": {"$gte": 10}})
>>> evaluate(f, {"lang": "py", "stars": 12})
True
"""

from ._ast import And, Compare, Exists, FilterNode, In, Not, Or, Scalar
from ._compiler import ALL_OPERATORS, FilterCompiler, push_not_down
from ._evaluate import evaluate, evaluate_many
from ._parse import parse_filter, to_dict

__all__ = [
    "ALL_OPERATORS",
    "And",
    "Compare",
    "Exists",
    "FilterCompiler",
    "FilterNode",
    "In",
    "Not",
    "Or",
    "Scalar",
    "evaluate",
    "evaluate_many",
    "parse_filter",
    "push_not_down",
    "to_dict",
]
