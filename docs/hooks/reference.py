"""MkDocs hook: the reference pages' generated parts, from the code at build time.

`reference/http-api.md` gets the operations of the OpenAPI document (and the site gets
`openapi.json` itself), `reference/cli.md` every `telltale` command's `--help`, and
`reference/metrics.md` every Prometheus metric the service registers. A page marks the
place with `<!-- generated: NAME -->`; a marker without a generator fails the build.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import tempfile
from typing import Any

_MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
_spec: dict[str, Any] | None = None


def _openapi() -> dict[str, Any]:
    global _spec
    if _spec is None:
        from app.main import create_app
        from app.settings import Settings

        media = tempfile.mkdtemp(prefix="telltale-docs-")
        app = create_app(
            Settings(database_url="sqlite://", media_dir=media), start_background=False
        )
        _spec = app.openapi()
    return _spec


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _http_api() -> str:
    spec = _openapi()
    by_tag: dict[str, list[str]] = {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            tag = (op.get("tags") or [path.split("/")[3] if path.startswith("/api/") else "other"])[
                0
            ]
            body = op.get("requestBody", {}).get("content", {})
            schema = next(iter(body.values()), {}).get("schema", {}) if body else {}
            body_name = schema.get("$ref", "").rsplit("/", 1)[-1] or ("yes" if body else "")
            params = ", ".join(
                f"`{p['name']}`" + ("" if p.get("required") else "?")
                for p in op.get("parameters", [])
                if p.get("in") in ("query", "path")
            )
            answers = ", ".join(sorted(op.get("responses", {})))
            summary = op.get("description") or op.get("summary") or ""
            first = summary.strip().split("\n\n")[0]
            by_tag.setdefault(tag, []).append(
                f"| `{method.upper()}` | `{path}` | {_cell(first)} | {params} | {body_name} | {answers} |"
            )
    out = [
        f"Generated from the OpenAPI document of this release ({len(spec['paths'])} paths; "
        "the whole document: [openapi.json](../openapi.json), or `GET /openapi.json` on a "
        "running server).",
        "",
    ]
    for tag in sorted(by_tag):
        out += [
            f"## {tag}",
            "",
            "| method | path | what | parameters | body | answers |",
            "|---|---|---|---|---|---|",
            *by_tag[tag],
            "",
        ]
    return "\n".join(out)


def _cli() -> str:
    os.environ["COLUMNS"] = "100"
    from app.cli import build_parser

    out: list[str] = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        out.extend([f"## `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""])
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(sub, f"{name} {sub_name}")

    walk(build_parser(), "telltale")
    return "\n".join(out)


def _metrics() -> str:
    from prometheus_client import REGISTRY

    import app

    for module in pkgutil.walk_packages(app.__path__, "app."):
        if ".migrations" not in module.name and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    rows = []
    for collector in list(REGISTRY._collector_to_names):  # noqa: SLF001 (no public listing)
        labels = ", ".join(f"`{n}`" for n in getattr(collector, "_labelnames", ()))
        for family in collector.describe() if hasattr(collector, "describe") else []:
            if not family.name.startswith("telltale_"):
                continue
            name = family.name + ("_total" if family.type == "counter" else "")
            rows.append(f"| `{name}` | {family.type} | {labels} | {_cell(family.documentation)} |")
    return "\n".join(
        ["| metric | type | labels | meaning |", "|---|---|---|---|", *sorted(set(rows))]
    )


GENERATORS = {"http-api": _http_api, "cli": _cli, "metrics": _metrics}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def generate(m: re.Match[str]) -> str:
        if m.group(1) not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: no generator named {m.group(1)!r}")
        return GENERATORS[m.group(1)]()

    return _MARKER.sub(generate, markdown)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "openapi.json", content=json.dumps(_openapi(), indent=1)))
    return files
