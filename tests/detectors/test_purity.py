"""detectors/ is a pure library: no module under it imports app, sqlalchemy or fastapi."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

FORBIDDEN = ("app", "sqlalchemy", "fastapi")
DETECTORS = Path(__file__).resolve().parents[2] / "detectors"


def _modules() -> list[str]:
    # torch-only backends are left to the static check: importing torch costs ~10 s.
    root = DETECTORS.parent
    return [
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for p in sorted(DETECTORS.rglob("*.py"))
        if "torch" not in p.stem
    ]


def test_no_forbidden_import_statements() -> None:
    offenders = []
    for path in sorted(DETECTORS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{path}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_importing_every_detector_module_loads_none_of_them() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=DETECTORS.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
