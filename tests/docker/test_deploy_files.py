"""The docker files, checked without a Docker engine: structure, commands, environment."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from app.cli import build_parser
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def _subcommands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)  # type: ignore[arg-type]


def test_compose_has_the_scale_out_services():
    services = COMPOSE["services"]
    assert {"postgres", "migrate", "api", "scheduler", "embed-worker"} <= set(services)
    assert services["postgres"]["volumes"][0].startswith("pgdata:")
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["api"]["deploy"]["replicas"] >= 2
    assert services["api"]["environment"]["TELLTALE_SCHEDULER_ENABLED"] == "false"
    gpu = services["embed-worker"]
    assert gpu["profiles"] == ["gpu"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    for name in ("postgres", "api", "scheduler", "embed-worker"):
        assert "healthcheck" in services[name], name
    for name in ("api", "scheduler", "embed-worker"):
        assert (
            services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        )


def test_every_service_command_is_a_real_cli_command():
    commands = _subcommands()
    for name, svc in COMPOSE["services"].items():
        if "command" in svc and name != "postgres":
            assert svc["command"][0] in commands, (name, svc["command"])
    entry_cmd = re.search(r'CMD \["(\w+)"', DOCKERFILE.split("ENTRYPOINT")[1])
    assert entry_cmd and entry_cmd.group(1) in commands


def test_entry_commands_run_outside_docker():
    for name, svc in COMPOSE["services"].items():
        if "command" not in svc or name == "postgres":
            continue
        out = subprocess.run(
            [sys.executable, "-m", "app", *svc["command"][:1], "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, (name, out.stderr)


def test_secrets_come_from_the_environment_and_are_documented():
    env = COMPOSE["x-telltale-env"]
    assert "${POSTGRES_PASSWORD:?" in env["TELLTALE_DATABASE_URL"]
    assert env["TELLTALE_SECRET_KEY"].startswith("${TELLTALE_SECRET_KEY:?")
    known = {f"TELLTALE_{k.upper()}" for k in Settings.model_fields}
    used = {
        k
        for svc in COMPOSE["services"].values()
        for k in (svc.get("environment") or {})
        if k.startswith("TELLTALE_")
    } | set(env)
    assert used <= known, used - known
    readme = (ROOT / "README.md").read_text()
    for var in sorted(used):
        assert var in readme, f"{var} is not documented in README.md"


def test_dockerfile_is_multistage_nonroot_with_healthcheck():
    assert DOCKERFILE.count("FROM ") >= 2 and " AS build" in DOCKERFILE
    assert re.search(r"^USER telltale$", DOCKERFILE, re.M)
    assert "HEALTHCHECK" in DOCKERFILE
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in DOCKERFILE
    for path in ("app", "detectors", "pipelines"):
        assert f"COPY {path} ./{path}" in DOCKERFILE
