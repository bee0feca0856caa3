"""No import cycle between app's packages: each imports only what stands below it."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"


def _unit(module: str) -> str:
    """``app.alerts.store`` -> ``app.alerts``; a top-level module stands for itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in APP.rglob("*.py"):
        source = _unit(".".join(("app", *path.relative_to(APP).with_suffix("").parts)))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = _unit(name)
                if name.startswith("app.") and _exists(target) and target != source:
                    graph.setdefault(source, set()).add(target)
    return graph


def _exists(unit: str) -> bool:
    path = APP / unit.removeprefix("app.")
    return path.is_dir() or path.with_suffix(".py").is_file()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_cycles_are_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_app_packages() -> None:
    assert _cycles(_import_graph()) == []


def test_the_api_and_the_pages_do_not_import_each_other() -> None:
    graph = _import_graph()
    assert "app.web" not in graph.get("app.api", set())
    assert "app.api" not in graph.get("app.web", set())


def test_the_monitors_read_traces_through_the_store_not_the_otlp_receiver() -> None:
    assert "app.otlp" not in _import_graph().get("app.monitors", set())


def test_no_import_cycle_between_the_modules_of_a_monitor_run() -> None:
    """Inside app/monitors, app/alerts, app/ingest and app/scheduler, module by module."""
    graph: dict[str, set[str]] = {}
    for package in ("monitors", "alerts", "ingest", "scheduler"):
        for path in (APP / package).rglob("*.py"):
            source = ".".join(("app", *path.relative_to(APP).with_suffix("").parts))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    for name in [node.module] + [f"{node.module}.{a.name}" for a in node.names]:
                        file = APP.parent / Path(*name.split(".")).with_suffix(".py")
                        if name.startswith("app.") and file.is_file() and name != source:
                            graph.setdefault(source, set()).add(name)
    assert _cycles(graph) == []
