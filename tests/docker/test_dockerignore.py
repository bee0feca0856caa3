"""`.dockerignore` keeps secrets, databases and virtualenvs out of the build context and
leaves in every file the Dockerfile copies (Docker's pattern rules, read here without an
engine: `*` within a segment, `**` across segments, a match on a folder covers its files,
the last matching line wins, `!` re-includes)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _patterns() -> list[tuple[bool, re.Pattern[str]]]:
    out = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        glob = line.removeprefix("!").strip("/")
        rx = "".join(
            ".*" if part == "**" else re.escape(part).replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
            for part in re.split(r"(\*\*)", glob)
        ).replace(".*/", "(.*/)?")
        out.append((keep, re.compile(rx)))
    return out


def ignored(path: str) -> bool:
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for keep, rx in _patterns():
        if any(rx.fullmatch(p) for p in prefixes):
            verdict = not keep
    return verdict


def _copied() -> list[str]:
    """The build context's paths the Dockerfile COPYs (not those from another stage)."""
    sources = []
    for line in (ROOT / "docker" / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources += [w for w in words[1:-1] if not w.startswith("--")]
    return sources


def test_what_the_dockerfile_copies_is_in_the_context():
    sources = _copied()
    assert {"pyproject.toml", "README.md", "app", "detectors", "pipelines"} <= set(sources)
    tracked = subprocess.run(
        ["git", "ls-files", "--", *sources], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert tracked
    assert [p for p in tracked if ignored(p)] == []


def test_secrets_databases_and_local_trees_stay_out():
    for path in (
        ".git/HEAD", ".venv/bin/python", ".venv-instr/x/bin/python", "telltale.env",
        "telltale.db", "telltale-demo.db-wal", "data/x.db", "site/index.html",
        "artifacts/run.json", "app/__pycache__/main.cpython-311.pyc", "telltale.egg-info/PKG-INFO",
    ):  # fmt: skip
        assert ignored(path), path
