"""The filter parser, the oracle and the documented truth table."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings

from vectorport import FilterError, UnsupportedFilterError
from vectorport.filters import (
    And,
    Compare,
    Exists,
    FilterCompiler,
    In,
    Not,
    Or,
    evaluate,
    parse_filter,
    push_not_down,
    to_dict,
)
from vectorport.testing.strategies import dataset_filters, typed_filters

DOCS = Path(__file__).resolve().parents[1] / "docs" / "filters.md"


def test_parse_shapes() -> None:
    assert parse_filter(None) is None
    assert parse_filter({}) is None
    assert parse_filter({"a": 1}) == Compare("a", "$eq", 1)
    assert parse_filter({"a": {"$gte": 1, "$lt": 5}}) == And(
        (Compare("a", "$gte", 1), Compare("a", "$lt", 5))
    )
    assert parse_filter({"a": {"$in": ["x", 2]}}) == In("a", ("x", 2))
    assert parse_filter({"a": {"$nin": [True]}}) == In("a", (True,), negated=True)
    assert parse_filter({"a": {"$exists": False}}) == Exists("a", False)
    assert parse_filter({"$or": [{"a": 1}, {"b": 2}]}) == Or((Compare("a", "$eq", 1), Compare("b", "$eq", 2)))
    assert parse_filter({"a": {"$not": {"$gt": 3}}}) == Not(Compare("a", "$gt", 3))
    assert parse_filter({"$not": {"a": 1}}) == Not(Compare("a", "$eq", 1))
    assert parse_filter({"a.b": 1}) == Compare("a.b", "$eq", 1)


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [
        ({"a": {"$foo": 1}}, "a.$foo", "unknown operator"),
        ({"$foo": [1]}, "$foo", "unknown operator"),
        ({"$eq": 1}, "$eq", "applies to a field"),
        ({"a": {"$gt": "x"}}, "a.$gt", "takes a number"),
        ({"a": {"$gt": True}}, "a.$gt", "takes a number"),
        ({"a": {"$in": []}}, "a.$in", "at least one value"),
        ({"a": {"$in": "x"}}, "a.$in", "list of values"),
        ({"a": {"$in": [1, None]}}, "a.$in[1]", "null"),
        ({"a": float("nan")}, "a", "finite"),
        ({"a": {"$lt": float("inf")}}, "a.$lt", "finite"),
        ({"$and": []}, "$and", "at least one"),
        ({"$and": {"a": 1}}, "$and", "list of filters"),
        ({"$or": [{"a": 1}, {}]}, "$or[1]", "empty object"),
        ({"a": None}, "a", "null"),
        ({"a": [1, 2]}, "a", "string, number or boolean"),
        ({"a": {"$exists": 1}}, "a.$exists", "true or false"),
        ({"a": {"$gt": 1, "b": 2}}, "a", "do not mix"),
        ({"a": {"$and": [{"b": 1}]}}, "a.$and", "top-level"),
        ({"a": {"$not": 3}}, "a.$not", "operator object"),
    ],
)
def test_malformed_filters_name_the_path(spec: dict, path: str, fragment: str) -> None:
    with pytest.raises(FilterError) as info:
        parse_filter(spec)
    assert info.value.path == path
    assert fragment in str(info.value)


def test_non_object_filter() -> None:
    with pytest.raises(FilterError):
        parse_filter([{"a": 1}])  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(spec=dataset_filters() | typed_filters())
def test_to_dict_round_trips(spec: dict) -> None:
    tree = parse_filter(spec)
    assert tree is not None
    assert parse_filter(to_dict(tree)) == tree


def _flat_meta() -> list[dict]:
    values = [None, "x", "y", "1", 1, 1.0, 2, 0.5, True, False, ["x", "y"], [1, 2], [], {"p": 1}]
    out: list[dict] = [{}]
    out += [{"a": v} for v in values]
    out += [{"a": v, "b": w} for v in values[:6] for w in values[6:10]]
    out += [{"tags": ["x"]}, {"tags": ["y", "z"]}, {"c": "x", "tags": []}]
    return out


@settings(max_examples=400, deadline=None)
@given(spec=typed_filters())
def test_push_not_down_preserves_meaning(spec: dict) -> None:
    tree = parse_filter(spec)
    rewritten = push_not_down(tree)  # type: ignore[arg-type]
    for meta in _flat_meta():
        assert evaluate(tree, meta) == evaluate(rewritten, meta), (spec, meta)


@settings(max_examples=400, deadline=None)
@given(spec=typed_filters())
def test_ne_and_nin_are_exact_negations(spec: dict) -> None:
    tree = parse_filter(spec)
    for meta in _flat_meta():
        assert evaluate(Not(tree), meta) is not evaluate(tree, meta)  # type: ignore[arg-type]


def test_truth_table_in_docs_matches_the_oracle() -> None:
    text = DOCS.read_text().split("## Truth table", 1)[1]
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    header, rows = lines[0], lines[1:]
    filters = [json.loads(c) for c in re.findall(r"`([^`]*)`", header)[1:]]
    assert len(filters) >= 8 and len(rows) >= 10
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        value = cells[0].strip("`")
        meta = {} if value == "missing" else {"f": json.loads(value)}
        for spec, cell in zip(filters, cells[1:], strict=True):
            assert cell in ("✓", "·")
            assert evaluate(parse_filter(spec), meta) == (cell == "✓"), f"{spec} on {meta}"


class OnlyEquality(FilterCompiler[str]):
    backend = "toy"

    def visit_eq(self, node: Compare) -> str:
        return f"{node.field}={node.value}"

    def visit_and(self, node: And) -> str:
        return " AND ".join(self.compile(c) for c in node.children)


def test_compiler_refuses_unhandled_nodes_and_derives_capabilities() -> None:
    assert OnlyEquality.supported_operators() == {"$eq", "$and"}
    compiler = OnlyEquality()
    assert compiler.compile(parse_filter({"a": 1, "b": "x"})) == "a=1 AND b=x"  # type: ignore[arg-type]
    with pytest.raises(UnsupportedFilterError, match=r"toy cannot apply .*\$gt"):
        compiler.compile(parse_filter({"a": {"$gt": 1}}))  # type: ignore[arg-type]
