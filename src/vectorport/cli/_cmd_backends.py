"""``vectorport backends`` and ``vectorport info URL``."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from .._registry import available_backends, broken_backends, connect
from ..exceptions import ConfigurationError
from ._common import JsonOption, emit_json, out_console, reported_errors


def backends(as_json: bool = JsonOption) -> None:
    """List the backends: URL schemes, whether the driver is installed, the pip extra, limits."""
    rows: list[dict[str, Any]] = []
    for info in available_backends():
        row: dict[str, Any] = {
            "name": info.name,
            "schemes": list(info.schemes),
            "installed": info.installed,
            "extra": info.extra or None,
            "install": f"pip install 'vectorport[{info.extra}]'" if info.extra else None,
            "capabilities": None,
        }
        if info.installed:
            try:
                row["capabilities"] = info.load().capabilities.summary()
            except Exception as exc:  # a broken third-party backend must not hide the others
                row["error"] = f"{type(exc).__name__}: {exc}"
        rows.append(row)
    for problem in broken_backends():  # an entry point that does not load: shown, not fatal
        name = problem.split(" = ", 1)[0]
        rows.append(
            {
                "name": name,
                "schemes": [],
                "installed": False,
                "extra": None,
                "install": None,
                "capabilities": None,
                "error": problem,
            }
        )
    if as_json:
        emit_json({"backends": rows}, "vectorport.backends/1")
        return
    table = Table(title="vectorport backends")
    for col in ("backend", "schemes", "installed", "extra", "metrics", "max dim", "top-k", "exact"):
        table.add_column(col)
    for row in rows:
        caps = row["capabilities"] or {}
        table.add_row(
            row["name"],
            ", ".join(row["schemes"]),
            "yes" if row["installed"] else "no",
            row["extra"] or "-",
            ", ".join(caps.get("metrics", [])),
            str(caps.get("max_dimension", "")),
            str(caps.get("max_top_k") or "-") if caps else "",
            ("exact" if caps.get("exact") else "ANN") if caps else "",
        )
    out_console.print(table)


def info(
    url: str = typer.Argument(..., help="Store URL, e.g. memory://docs or chroma:///data?collection=docs"),
    model: str | None = typer.Option(
        None,
        "--model",
        help="A SQLAlchemy mapped class, module:Class (importable from here): open its table at URL "
        "with the roles its columns say, as connect(Model, bind=URL) does.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Show a collection: backend, dimension, metric, record count and capabilities (and, for a
    table made elsewhere, its layout: what each role maps to, inferred from --model if given)."""
    with reported_errors():
        target, bind = (url, None) if model is None else (_import_model(model), url)
        with connect(target, bind=bind) as store:
            data = store.info()
    if as_json:
        # a PostgreSQL schema is the collection's "db_schema": "schema" names the document's
        doc = {("db_schema" if k == "schema" else k): v for k, v in data.items()}
        emit_json(doc, "vectorport.info/1")
        return
    table = Table(title=data["url"], show_header=False)
    for key in ("backend", "collection", "dimension", "metric", "embedding_model", "count"):
        table.add_row(key, str(data.get(key)))
    caps = data["capabilities"]
    table.add_row("exact search", str(caps["exact"]))
    table.add_row("filter operators", " ".join(caps["filter_operators"]))
    table.add_row("features", " ".join(caps["features"]) or "-")
    capture = data.get("capture")
    if isinstance(capture, dict):  # a store that captures its changes: what that holds back
        table.add_row("capture", f"{capture['method']} {capture['name']}")
        for key, value in capture.items():
            if key not in ("method", "name"):
                table.add_row(f"  {key.replace('_', ' ')}", "-" if value is None else str(value))
    layout = data.get("layout")
    if isinstance(layout, dict):  # a store that reads other tools' layouts says which it found
        how = f" (detected: {layout['detected']})" if layout.get("detected") else ""
        where = f", text in {layout['text_key']!r}" if layout.get("text_key") else ""
        table.add_row("layout", f"{layout.get('name')}{where}{how}")
        for role, where in (layout.get("roles") or {}).items():
            table.add_row(
                f"  {role}", json.dumps(where, ensure_ascii=False) if isinstance(where, dict) else str(where)
            )
        if "writable" in layout:
            reason = layout.get("read_only_reason")
            table.add_row("writable", "yes" if layout["writable"] else f"no: {reason}" if reason else "no")
        if layout.get("url"):
            table.add_row("url to use", str(layout["url"]))
        for key in ("inferred_from", "connections"):
            if layout.get(key):
                table.add_row(key.replace("_", " "), str(layout[key]))
    out_console.print(table)


def _import_model(spec: str) -> Any:
    """The class ``module:Class`` names, imported with the current directory on the path (as
    an application's own modules are run)."""
    import importlib
    import os
    import sys

    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigurationError(f"--model {spec!r}: give module:Class, e.g. --model app.models:Chunk")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"--model {spec!r}: cannot import it ({exc}); run from the directory its module is "
            "found from, or set PYTHONPATH"
        ) from None
    return found


def register(app: typer.Typer) -> None:
    app.command("backends")(backends)
    app.command("info")(info)
