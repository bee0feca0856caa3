"""The README is the front door and the docs site holds the rest: both are checked here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_docs_site_builds_strict(tmp_path):
    """Every page in the nav, every link and anchor resolves, the generated reference
    pages (OpenAPI, CLI, metrics) build from the code, the README's quickstart is included."""
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert out.returncode == 0, out.stderr[-4000:]
    site = tmp_path / "site"
    quickstart = (site / "quickstart" / "index.html").read_text()
    assert "telltale.env" in quickstart and "start:quickstart" not in quickstart
    api = (site / "reference" / "http-api" / "index.html").read_text()
    assert "/api/v1/monitors/defaults" in api and (site / "openapi.json").is_file()
    assert "keys revoke" in (site / "reference" / "cli" / "index.html").read_text()
    assert (
        "telltale_ingest_events_total"
        in (site / "reference" / "metrics" / "index.html").read_text()
    )


def test_every_docs_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))

    def pages(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        if isinstance(node, dict):
            return [p for v in node.values() for p in pages(v)]
        if isinstance(node, list):
            return [p for v in node for p in pages(v)]
        return []

    in_nav = set(pages(config["nav"]))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == in_nav, (on_disk - in_nav, in_nav - on_disk)


def test_the_readme_is_short_and_starts_with_the_two_commands():
    assert len(README.encode()) <= 10 * 1024
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block and README.index("```sh") < README.index("\n## ")
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)


def test_the_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).is_file(), target


def test_the_readme_gives_the_first_verdict_times_the_runner_enforces() -> None:
    """One figure everywhere: the README's hours are the ones BaselinePolicy computes."""
    from app.project_cli import first_verdicts_line
    from app.web.health import first_verdict_groups

    said = " ".join(README.split())
    line = first_verdicts_line()
    for hours, modes in first_verdict_groups():
        assert f"{hours:g} hours" in said, hours
        assert f"{hours:g} h" in line and all(mode in line for mode in modes), line
