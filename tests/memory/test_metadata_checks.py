"""The quick metadata check (no path built per value) against the full one that names each
problem: on metadata of scalars and lists of scalars, under any backend's rules, it finds
"nothing wrong" exactly where the full check finds nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vectorport import MetadataRules
from vectorport._validate import _plain_fits, _plain_json, _rule_problems, metadata_problems

pytestmark = pytest.mark.memory

_keys = st.sampled_from(["a", "b", "tags", "", "x\x00", "_r", "meta_k", "é", "score"])
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**31, 0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="ab\x00é", max_size=4),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=5))
_metadata = st.dictionaries(_keys, _values, max_size=6)
_rules = st.builds(
    MetadataRules,
    nested_objects=st.booleans(),
    null=st.booleans(),
    empty_lists=st.booleans(),
    mixed_lists=st.booleans(),
    max_list_items=st.one_of(st.none(), st.integers(0, 8)),
    max_int=st.one_of(st.none(), st.sampled_from([2**31, 2**53, 2**63 - 1])),
    float_list_max_int=st.one_of(st.none(), st.just(2**53)),
    reserved_keys=st.sampled_from([frozenset(), frozenset({"a"}), frozenset({"score", "tags"})]),
    reserved_prefixes=st.sampled_from([(), ("_",), ("meta_", "_")]),
    nul_characters=st.booleans(),
)


@settings(max_examples=600)
@given(_metadata, _rules)
def test_the_quick_check_passes_exactly_what_the_full_check_passes(
    metadata: dict[str, Any], rules: MetadataRules
) -> None:
    assert _plain_json(metadata)
    full: list[tuple[str, str]] = []
    _rule_problems(metadata, rules, full)
    assert _plain_fits(metadata, rules) == (not full), full
    # what the caller gets is the full check's answer either way (no size or key-count limit here)
    assert metadata_problems(metadata, rules) == full


@pytest.mark.parametrize(
    ("metadata", "rules", "path"),
    [
        ({"a": None}, MetadataRules(null=False), "metadata.a"),
        ({"tags": [1, None]}, MetadataRules(null=False), "metadata.tags[1]"),
        ({"tags": []}, MetadataRules(empty_lists=False), "metadata.tags"),
        ({"tags": ["x", 1]}, MetadataRules(mixed_lists=False), "metadata.tags"),
        ({"n": 2**63}, MetadataRules(max_int=2**63 - 1), "metadata.n"),
        ({"l": [1.5, 2**60]}, MetadataRules(float_list_max_int=2**53), "metadata.l"),
        ({"s": "a\x00b"}, MetadataRules(nul_characters=False), "metadata.s"),
        ({"k\x00": 1}, MetadataRules(nul_characters=False), "metadata"),
        ({"": 1}, MetadataRules(), "metadata."),
        ({"_id": 1}, MetadataRules(reserved_prefixes=("_",)), "metadata._id"),
        ({"a": [1, 2], "b": [3]}, MetadataRules(max_list_items=2), "metadata"),
    ],
)
def test_each_rule_is_still_named_with_its_path(
    metadata: dict[str, Any], rules: MetadataRules, path: str
) -> None:
    problems = metadata_problems(metadata, rules)
    assert problems and problems[0][0] == path, problems
