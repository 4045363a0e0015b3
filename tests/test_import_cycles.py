"""No module of vectorport imports, at module level, a module that imports it back (directly or
through others): the graph of module-level imports (``TYPE_CHECKING`` blocks left out) has no
cycle, package ``__init__`` modules included."""

from __future__ import annotations

import ast
from pathlib import Path

import vectorport

ROOT = Path(vectorport.__file__).resolve().parent


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _imports(name: str, path: Path, package: bool, known: dict[str, tuple[Path, bool]]) -> set[str]:
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for item in ast.walk(node) if isinstance(node, ast.If | ast.Try) else [node]:
            if isinstance(item, ast.ImportFrom):
                base = name.split(".")[: None if package else -1]
                if item.level:
                    base = base[: len(base) - item.level + 1]
                    target = ".".join(base + ([item.module] if item.module else []))
                else:
                    target = item.module or ""
                for alias in item.names:
                    full = f"{target}.{alias.name}"
                    if full in known or target in known:
                        out.add(full if full in known else target)
            elif isinstance(item, ast.Import):
                out.update(a.name for a in item.names if a.name in known)
    return out


def test_module_imports_form_no_cycle() -> None:
    known = _modules()
    graph = {name: _imports(name, path, package, known) for name, (path, package) in known.items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            raise AssertionError("import cycle: " + " -> ".join([*trail[trail.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert len(graph) > 100  # the walk saw the package
