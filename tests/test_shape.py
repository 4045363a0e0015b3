"""The contract and the template stay apart and small: ``connect()`` returns the
:class:`~vectorport.VectorStore` protocol (which holds what the engine and the adapters use of a
store), no code outside the backends needs to know a store is a ``BaseStore``, the template's
classes stay at most 25 methods each, shared modules test no backend's name, and the top-level
modules and the backends import each other in no cycle, imports inside functions counted."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest

import vectorport
from vectorport import AsyncStore, Record, VectorStore
from vectorport._base import BaseStore
from vectorport._lifecycle import StoreLifecycle

ROOT = Path(vectorport.__file__).resolve().parent
BACKEND_NAMES = {"chroma", "memory", "parquet", "pgvector", "s3vectors"}
MAX_METHODS = 25


def test_connect_returns_the_protocol_and_aconnect_its_awaitable_form() -> None:
    assert typing.get_type_hints(vectorport.connect)["return"] is VectorStore
    assert typing.get_type_hints(vectorport.aconnect)["return"] == AsyncStore[VectorStore]


@pytest.mark.parametrize("member", ["bind", "ensure", "check_filter", "delete_all", "__enter__", "__exit__"])
def test_what_the_engine_and_the_adapters_use_of_a_store_is_in_the_protocol(member: str) -> None:
    assert member in VectorStore.__dict__ and callable(VectorStore.__dict__[member])
    assert "collection" in typing.get_type_hints(VectorStore)


@pytest.mark.memory
def test_a_connected_store_meets_the_protocol_and_ensure_creates_then_checks() -> None:
    store = vectorport.connect("memory://shape-ensure", dimension=2)
    assert isinstance(store, VectorStore)
    spec = store.spec
    store.drop()
    assert store.ensure(spec) == spec  # missing: created as the spec says
    store.upsert([Record("a", [1.0, 0.0])])
    assert store.ensure(spec) == spec and store.count() == 1  # existing: opened, kept
    wider = type(spec)(spec.name, 3, spec.metric, spec.embedding_model)
    with pytest.raises(vectorport.ConfigurationError, match="dimension 2, not 3"):
        store.ensure(wider)
    store.drop()


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)}


@pytest.mark.parametrize("cls", [BaseStore, StoreLifecycle])
def test_the_template_classes_hold_at_most_25_methods_each(cls: type) -> None:
    node = _classes(Path(inspect.getfile(cls)))[cls.__name__]
    methods = [n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert len(methods) <= MAX_METHODS, methods


# protocols restate the contract (what a store or an embedder has), they hold no code
_PROTOCOLS = {"VectorStore", "AsyncStore"}
MAX_LINES = 60


def test_no_class_in_the_package_holds_more_than_25_methods_nor_a_function_more_than_60_lines() -> None:
    big: list[str] = []
    long: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name not in _PROTOCOLS:
                count = sum(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in node.body)
                if count > MAX_METHODS:
                    big.append(f"{where}:{node.name} ({count})")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{where}:{node.name} ({lines} lines)")
    assert not big and not long, (big, long)


def _outside_the_backends() -> list[Path]:
    template = {ROOT / "_base.py", ROOT / "_lifecycle.py"}
    shared = (p for p in ROOT.rglob("*.py") if "backends" not in p.relative_to(ROOT).parts)
    return [p for p in shared if p not in template]


def test_no_code_outside_the_backends_asks_whether_a_store_is_a_base_store() -> None:
    found = []
    for path in _outside_the_backends():
        for node in ast.walk(ast.parse(path.read_text())):
            call = isinstance(node, ast.Call) and ast.unparse(node.func) in ("isinstance", "cast")
            if call and "BaseStore" in ast.unparse(node):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found


def test_shared_modules_test_no_backends_name() -> None:
    """A backend's difference is data on its class or descriptor, never ``name == "pgvector"``
    in a module every backend shares (the package's top-level modules)."""
    found = []
    for path in ROOT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                names = [c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)]
                if BACKEND_NAMES & {n for n in names if isinstance(n, str)}:
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(name: str, path: Path, node: ast.ImportFrom | ast.Import, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    base = name.split(".")[: None if path.name == "__init__.py" else -1]
    target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
    if not node.level:
        target = node.module or ""
    return {f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names} & known


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every import of the module, those inside functions included, ``TYPE_CHECKING`` ones not."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                out.update(_targets(name, path, child, known))
            visit(child)

    visit(ast.parse(path.read_text()))
    return out


def _mine(name: str) -> bool:
    """The package's top-level modules and the backends."""
    parts = name.split(".")
    return len(parts) <= 2 or parts[1] == "backends"


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph[name])
    return seen


def test_the_top_level_modules_and_the_backends_import_in_no_cycle_counting_imports_in_functions() -> None:
    paths = {_module(p): p for p in ROOT.rglob("*.py")}
    graph = {name: _imports(name, path, set(paths)) for name, path in paths.items()}
    reach = {name: _reach(graph, name) for name in graph}
    cycles = set()
    for name in sorted(n for n in graph if _mine(n) and n in reach[n]):
        cycle = frozenset(m for m in reach[name] if name in reach[m])
        # a package importing its own submodule (a backend's __init__ naming its store lazily)
        # is the package's own business, as the structure count has it
        a, b = sorted(cycle) if len(cycle) == 2 else ("", "")
        if not (a and b.startswith(a + ".")):
            cycles.add(" ".join(sorted(cycle)))
    assert not cycles, sorted(cycles)
    assert len(graph) > 100  # the walk saw the package


@pytest.mark.memory
def test_a_mapped_class_is_read_by_the_backend_of_its_bind_and_one_that_reads_none_says_so() -> None:
    sqlalchemy = pytest.importorskip("sqlalchemy")
    table = sqlalchemy.Table(
        "shape_chunks",
        sqlalchemy.MetaData(),
        sqlalchemy.Column("id", sqlalchemy.String, primary_key=True),
    )
    with pytest.raises(
        vectorport.ConfigurationError, match="the memory backend opens no SQLAlchemy mapped class"
    ) as info:
        vectorport.connect(table, bind="memory://shape-mapped")
    assert "those that do: pgvector" in str(info.value)
