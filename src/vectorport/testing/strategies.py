"""Hypothesis strategies: portable filters, record keys and metadata that fit a backend."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .._capabilities import MetadataRules
from .._models import Record
from .data import LANGS, TAGS

__all__ = [
    "dataset_filters",
    "hostile_filters",
    "hostile_records",
    "metadata_for",
    "record_keys",
    "texts_for",
    "typed_filters",
]

_KEY_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc"),
    blacklist_characters="\x00",
)


def texts_for(rules: MetadataRules) -> st.SearchStrategy[str | None]:
    """Chunk texts (or ``None``) a backend with ``rules`` can hold (no NUL where it cannot)."""
    banned = "" if rules.nul_characters else "\x00"
    chars = st.characters(exclude_categories=["Cs"], exclude_characters=banned)
    return st.one_of(st.none(), st.text(chars, max_size=30))


def record_keys() -> st.SearchStrategy[str]:
    """Chunk keys with the characters that break naive code: ``/ # space " '`` and non-ASCII."""
    plain = st.text(_KEY_CHARS, min_size=1, max_size=24)
    chunky = st.builds(
        lambda path, i: f"{path}#chunk{i}",
        st.text(st.sampled_from("abc/ #\"'é中-_."), min_size=1, max_size=12),
        st.integers(0, 99),
    )
    return st.one_of(chunky, plain)


def _leaf(
    field: str, values: st.SearchStrategy[Any], numbers: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        values.map(lambda v: {field: v}),
        st.tuples(st.sampled_from(["$eq", "$ne", "$is", "$is_not"]), values).map(
            lambda t: {field: {t[0]: t[1]}}
        ),
        st.tuples(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), numbers).map(
            lambda t: {field: {t[0]: t[1]}}
        ),
        st.tuples(st.sampled_from(["$in", "$nin"]), st.lists(values, min_size=1, max_size=3)).map(
            lambda t: {field: {t[0]: t[1]}}
        ),
        st.booleans().map(lambda b: {field: {"$exists": b}}),
    )


def _combine(leaves: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def extend(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        return st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$and": xs}),
            st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$or": xs}),
            inner.map(lambda x: {"$not": x}),
        )

    return st.recursive(leaves, extend, max_leaves=4)


def dataset_filters() -> st.SearchStrategy[dict[str, Any]]:
    """Filters over the fields of :func:`vectorport.testing.data.clustered_records`."""
    leaves = st.one_of(
        _leaf("lang", st.sampled_from([*LANGS, "xx"]), st.integers(0, 3)),
        _leaf("tags", st.sampled_from(TAGS), st.integers(0, 3)),
        _leaf("cluster", st.integers(0, 8), st.integers(-1, 9)),
        _leaf("stars", st.integers(0, 100), st.integers(-5, 105) | st.floats(0, 100)),
        _leaf("score", st.floats(0, 1), st.floats(-0.1, 1.1)),
        _leaf("draft", st.booleans(), st.integers(0, 1)),
        _leaf("year", st.integers(2015, 2026), st.integers(2014, 2027)),
        _leaf("nope", st.sampled_from(["a", 1, True]), st.integers(0, 1)),
    )
    return _combine(leaves)


_FIELDS = ("a", "b", "c", "tags")


def _typed_values() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(["x", "y", "1", "true", ""]),
        st.integers(-2, 2),
        st.sampled_from([0.5, 1.0, -1.5]),
        st.booleans(),
    )


def typed_filters() -> st.SearchStrategy[dict[str, Any]]:
    """Filters over a few fields whose values may be of any type: type-strictness tests."""
    leaves = st.one_of(
        *(_leaf(f, _typed_values(), st.integers(-2, 2) | st.sampled_from([0.5, -1.5])) for f in _FIELDS)
    )
    return _combine(leaves)


def metadata_for(rules: MetadataRules, typed: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """Metadata a backend with ``rules`` can hold. ``typed=True`` uses the fields of
    :func:`typed_filters` (values of mixed types across records) plus a few free keys."""
    limit = rules.max_int if rules.max_int is not None else 2**62
    ints = st.integers(-min(limit, 2**62), min(limit, 2**62))
    strings = st.text(_KEY_CHARS, max_size=12)
    scalar = st.one_of(strings, ints, st.floats(-1e9, 1e9, allow_nan=False), st.booleans())
    if rules.mixed_lists:
        lists = st.lists(scalar, min_size=0 if rules.empty_lists else 1, max_size=4)
    else:
        low = 0 if rules.empty_lists else 1
        lists = st.one_of(
            st.lists(strings, min_size=low, max_size=4),
            st.lists(ints, min_size=low, max_size=4),
            st.lists(st.booleans(), min_size=low, max_size=4),
        )
    leaf = st.one_of(scalar, lists, st.none()) if rules.null else st.one_of(scalar, lists)
    value = (
        st.recursive(
            leaf, lambda inner: st.dictionaries(st.sampled_from("pqr"), inner, max_size=2), max_leaves=4
        )
        if rules.nested_objects
        else leaf
    )
    reserved = set(rules.reserved_keys)
    free_keys = st.text(
        st.sampled_from("abcdefghijklmnopqrstuvwxyz_0123456789"), min_size=1, max_size=8
    ).filter(lambda k: k not in reserved and not k.startswith(rules.reserved_prefixes or ("\x00",)))
    # the typed fields hold a scalar on one record and a list (of one type) on another, so
    # array semantics ($eq/$in match any element, ranges never match) meet type-strictness
    typed_lists = st.one_of(
        st.lists(st.sampled_from(["x", "y", "1", "true"]), min_size=1, max_size=3),
        st.lists(st.integers(-2, 2), min_size=1, max_size=3),
        st.lists(st.booleans(), min_size=1, max_size=2),
    )
    typed_values = st.one_of(_typed_values(), typed_lists)
    tags = st.one_of(
        st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=3),
        st.sampled_from(["x", "y"]),
        st.lists(st.integers(-2, 2), min_size=1, max_size=2),
    )
    if typed:
        fixed = st.fixed_dictionaries(
            {},
            optional={"a": typed_values, "b": typed_values, "c": typed_values, "tags": tags},
        )
        extra = st.dictionaries(free_keys.filter(lambda k: k not in _FIELDS), value, max_size=2)
        return st.tuples(fixed, extra).map(lambda t: {**t[1], **t[0]})
    max_keys = min(rules.max_keys or 6, 6)
    return st.dictionaries(free_keys, value, max_size=max_keys)


# ---------------------------------------------------------------- hostile input (fuzzing)
_ODD_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
    max_size=40,
) | st.sampled_from(
    ["", "\x00", "\ud800", "a\udc00b", "x" * 1100, "é" * 600, "$and", "#", "'; DROP TABLE t; --"]
)
_ODD_NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([1e-30, 3e38, -3e38, 1e-45, 0.0, -0.0]),
)
_ODD_SCALAR: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    _ODD_NUMBER,
    _ODD_TEXT,
    st.binary(max_size=4),
    st.just({1, 2}),
    st.just((1, "a")),
)


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


_ODD_JSON: st.SearchStrategy[Any] = st.recursive(
    _ODD_SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(_ODD_TEXT, st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=12,
) | st.sampled_from([_deep(40), list(range(6000)), ["x"] * 6000])


def hostile_records(dimension: int) -> st.SearchStrategy[Record]:
    """Records that are wrong in every way a caller can get one wrong: keys (empty, NUL, lone
    surrogates, too long, not strings), vectors (wrong length, NaN/inf, tiny or huge, strings,
    booleans, None), metadata (not JSON, not an object, nested thousands deep, huge lists,
    tuples, sets, bytes, odd keys) and text (not a string, NUL, surrogates) — mixed with valid
    parts, so that each record has one or a few problems or none."""
    good_vector = st.lists(st.integers(-9, 9).map(float), min_size=dimension, max_size=dimension).filter(any)
    vector = st.one_of(
        good_vector,
        st.lists(_ODD_NUMBER, min_size=dimension, max_size=dimension),
        st.lists(st.floats(-1, 1), min_size=0, max_size=dimension + 2),
        st.lists(st.one_of(st.booleans(), _ODD_TEXT, st.none()), min_size=dimension, max_size=dimension),
        st.sampled_from(["1,2", None, 5, {"x": 1}, [[1.0] * dimension]]),
    )
    key: st.SearchStrategy[Any] = st.one_of(record_keys(), _ODD_TEXT, st.integers(), st.none())
    metadata: st.SearchStrategy[Any] = st.one_of(
        st.dictionaries(st.text(max_size=8), _ODD_JSON, max_size=4), _ODD_JSON, st.just({})
    )
    text: st.SearchStrategy[Any] = st.one_of(st.none(), _ODD_TEXT, st.integers(), st.just(b"bytes"))
    return st.builds(Record, key, vector, metadata, text)


def hostile_filters() -> st.SearchStrategy[Any]:
    """Filters that are malformed, unsupported somewhere, or huge: unknown and misplaced
    operators, wrong operand types, empty lists and objects, deep nesting, odd field names."""
    ops = st.sampled_from(
        ["$eq", "$ne", "$is", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$not", "$and", "$or",
         "$regex", "$where", "", "$"]
    )  # fmt: skip
    field = st.one_of(st.sampled_from(["lang", "n", "tags", "a.b", "$and", "", "\x00", "\ud800"]), _ODD_TEXT)
    leaf = st.one_of(_ODD_SCALAR, st.lists(_ODD_SCALAR, max_size=4), st.just([]), st.just({}))
    tree: st.SearchStrategy[Any] = st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.dictionaries(field, inner, max_size=3),
            st.dictionaries(ops, inner, max_size=2),
            st.lists(inner, max_size=3),
        ),
        max_leaves=10,
    )
    # deeper trees are tested on their own: hypothesis cannot print a failing example past ~500
    deep_not: Any = {"lang": "en"}
    for _ in range(40):
        deep_not = {"$not": deep_not}
    return st.one_of(tree, st.just(deep_not), st.just({"n": {"$in": list(range(70_000))}}))
