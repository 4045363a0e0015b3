"""A record's digest is stored in checkpoints and sync states, so its bytes never change: the
canonical metadata JSON is ``json.dumps(sort_keys=True, compact, ensure_ascii=False)`` byte for
byte, however it is produced (orjson where it writes the same, json elsewhere)."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorport._digest import record_digest
from vectorport._json import canonical_dumps

pytestmark = pytest.mark.memory


def _reference(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _floats() -> st.SearchStrategy[float]:
    # every magnitude, the small ones (where orjson spells differently) and NaN/inf included
    tiny = st.builds(lambda m, e: m * 10.0**e, st.integers(-(10**6), 10**6), st.integers(-12, -3))
    return st.floats() | tiny | st.sampled_from([1e-05, 1e-4, 5e-324, 1e16, 1e22, -0.0])


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too (orjson refuses those)
    | _floats()
    | st.text()
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), _documents, max_size=6))
def test_canonical_json_is_json_dumps_byte_for_byte(doc: dict[str, Any]) -> None:
    assert canonical_dumps(doc) == _reference(doc)


def test_every_code_point_is_escaped_as_json_escapes_it() -> None:
    text = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)
    doc = {text: text, "\x00": "\x1f\x7f\u2028", "é": ["\\", '"', "\t\n\r\b\f"]}
    assert canonical_dumps(doc) == _reference(doc)


@pytest.mark.parametrize(
    "value", [1e-05, 1.5e-07, -3e-10, 0.00015000000000000001, math.nan, math.inf, 2**64, -(2**63) - 1]
)
def test_values_orjson_spells_differently_or_refuses_are_written_by_json(value: float) -> None:
    doc = {"v": value, "w": [value]}
    assert canonical_dumps(doc) == _reference(doc)


@pytest.mark.parametrize(
    ("record", "digest"),
    [
        (
            (
                "docs/intro.md#chunk3",
                [1.0, -0.5, 7.038531e-26],
                {"lang": "en", "page": 3, "score": 1e-05, "tags": ["a", "é"], "n": None, "big": 2**70},
                "hello",
            ),
            "bfaada51cc30123ca321d00af9b73de3",
        ),
        (("k", [0.25], None, None), "f8ba040553ba1092d0291a9be2e66f2e"),
        (("k", [0.25], {"b": [1, 2.5], "a": "x"}, ""), "0dc0151b91f86f9ef6cfd69eaa992736"),
    ],
)
def test_a_record_digest_is_the_one_stored_states_hold(record: tuple[Any, ...], digest: str) -> None:
    # the values earlier releases computed: checkpoints and sync states on disk compare against them
    assert record_digest(*record).hex() == digest
