"""The docker files, checked without a Docker engine: structure, commands, environment,
interpolation as compose does it, the one published port and healthchecks that test
something (run here against the processes they watch)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()
NGINX = (ROOT / "docker" / "nginx.conf").read_text()
DOCS = ROOT / "docs"

# The compose command the docs give for a fresh machine, and the variables it sets.
UP_COMMAND = "POSTGRES_PASSWORD=change-me docker compose -f docker/compose.yaml up -d --build"

_VAR = re.compile(r"\$(?:\$|\{([A-Za-z_]\w*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_]\w*))")


class Unset(Exception):
    """A `${VAR:?message}` (or `${VAR?message}`) met without its variable."""


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation (compose-spec, "Interpolation"): `$$`, `$VAR`, `${VAR}`,
    `${VAR:-default}`, `${VAR-default}`, `${VAR:?err}`, `${VAR?err}`, `${VAR:+alt}`,
    `${VAR+alt}`; a `$` it cannot read is an error, as in compose."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1) or m.group(4)
        op, arg = m.group(2), m.group(3) or ""
        value = env.get(name)
        is_set, non_empty = value is not None, bool(value)
        if op in (":?", "?"):
            if not (non_empty if op == ":?" else is_set):
                raise Unset(f"{name}: {arg}")
            return str(value)
        if op in (":-", "-"):
            return str(value) if (non_empty if op == ":-" else is_set) else arg
        if op in (":+", "+"):
            return arg if (non_empty if op == ":+" else is_set) else ""
        return value or ""

    out = _VAR.sub(one, text)
    leftover = _VAR.sub("", text).replace("$$", "")
    assert "$" not in leftover, (
        f"compose cannot read this: {leftover[leftover.index('$') - 20 :]!r}"
    )
    return out


def resolve(node: Any, env: dict[str, str]) -> Any:
    """The parsed file with every value interpolated (compose reads the YAML, then
    interpolates its values: a `$` in a comment is nothing)."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, dict):
        return {k: resolve(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(v, env) for v in node]
    return node


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def _assignments(command: str) -> dict[str, str]:
    words = shlex.split(command)
    return dict(w.split("=", 1) for w in words[: words.index("docker")])


def test_the_default_profile_starts_with_only_what_the_docs_set():
    env = _assignments(UP_COMMAND)
    # compose interpolates every service, profiled or not, before it picks profiles
    resolved = resolve(COMPOSE, env)
    assert "change-me" in resolved["x-telltale-env"]["TELLTALE_DATABASE_URL"]
    assert resolved["services"]["embed-worker"]["environment"]["TELLTALE_EMBED_PRETRAINED"] == ""
    with pytest.raises(Unset, match="POSTGRES_PASSWORD"):
        resolve(COMPOSE, {})
    # the required variables are exactly those the command sets
    required = {
        m.group(1)
        for text in _strings(COMPOSE)
        for m in _VAR.finditer(text)
        if m.group(2) in (":?", "?")
    }
    assert required == set(env)
    # an empty optional setting is read as unset, not refused (TELLTALE_SECRET_KEY="")
    blank = {k: v for k, v in resolved["x-telltale-env"].items() if v == ""}
    assert "TELLTALE_SECRET_KEY" in blank
    out = subprocess.run(
        [sys.executable, "-c", "from app.settings import Settings; s = Settings(); "
         "print(s.secret_key, s.outbound_allow)"],
        env=dict(os.environ, **blank), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.split() == ["None", "[]"], out.stderr


def test_the_docs_give_the_commands_the_test_checks():
    docker_doc = (DOCS / "operations" / "docker.md").read_text()
    assert UP_COMMAND in docker_doc
    assert "docker compose -f docker/compose.yaml exec api telltale init --project" in docker_doc
    assert "-v telltale-data:/data" in docker_doc and "-v telltale-data:/data" in DOCKERFILE


def test_compose_has_the_scale_out_services():
    services = COMPOSE["services"]
    assert {"postgres", "migrate", "api", "lb", "scheduler", "embed-worker"} <= set(services)
    assert services["postgres"]["volumes"][0].startswith("pgdata:")
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["api"]["deploy"]["replicas"] >= 2
    assert services["api"]["environment"]["TELLTALE_SCHEDULER_ENABLED"] == "false"
    gpu = services["embed-worker"]
    assert gpu["profiles"] == ["gpu"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    for name in ("api", "scheduler", "embed-worker"):
        assert (
            services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        )


def test_one_published_port_in_front_of_the_replicas():
    published = {name: svc["ports"] for name, svc in COMPOSE["services"].items() if "ports" in svc}
    assert list(published) == ["lb"] and len(published["lb"]) == 1
    host, container = interpolate(published["lb"][0], {}).rsplit(":", 1)
    assert host == "8000"
    assert re.search(rf"^\s*listen {container};", NGINX, re.M)
    assert re.search(r"^\s*server api:8000;", NGINX, re.M)  # every replica behind one name
    assert "proxy_pass http://telltale_api;" in NGINX
    mount = COMPOSE["services"]["lb"]["volumes"][0]
    assert mount.startswith("./nginx.conf:") and (ROOT / "docker" / "nginx.conf").is_file()
    assert COMPOSE["services"]["lb"]["depends_on"]["api"]["condition"] == "service_healthy"


def test_every_long_running_service_has_a_healthcheck_that_tests_something():
    for name, svc in COMPOSE["services"].items():
        if name == "migrate":
            continue
        test = " ".join(svc["healthcheck"]["test"])
        assert "os.kill(1, 0)" not in test and "true" != test.split()[-1], (name, test)
    api = " ".join(COMPOSE["services"]["api"]["healthcheck"]["test"])
    assert "/readyz" in api and "status != 200" in api
    for name in ("scheduler", "embed-worker"):
        svc = COMPOSE["services"][name]
        beat = svc["command"][svc["command"].index("--heartbeat") + 1]
        assert beat in " ".join(svc["healthcheck"]["test"]), name


def test_the_scheduler_healthcheck_follows_the_scheduler(tmp_path):
    """Run `telltale scheduler --heartbeat` and compose's own healthcheck command against it:
    healthy while it runs, unhealthy once its heartbeat is stale."""
    svc = COMPOSE["services"]["scheduler"]
    beat_path = svc["command"][svc["command"].index("--heartbeat") + 1]
    beat = tmp_path / "beat"
    check = [a.replace(beat_path, str(beat)) for a in svc["healthcheck"]["test"][1:]]
    check[0] = sys.executable if check[0] == "python" else check[0]
    env = dict(os.environ, TELLTALE_DATABASE_URL=f"sqlite:///{tmp_path / 's.db'}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", *svc["command"][:1], "--heartbeat", str(beat), "--tick", "60"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not beat.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no heartbeat"
            time.sleep(0.2)
        assert subprocess.run(check, timeout=30).returncode == 0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    old = time.time() - 600
    os.utime(beat, (old, old))
    assert subprocess.run(check, timeout=30).returncode != 0
    api_check = [sys.executable if a == "python" else a
                 for a in COMPOSE["services"]["api"]["healthcheck"]["test"][1:]]  # fmt: skip
    assert subprocess.run(api_check, timeout=30, capture_output=True).returncode != 0  # no server


def _subcommands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return set(sub.choices)  # type: ignore[arg-type]


def test_every_service_command_is_a_real_cli_command():
    commands = _subcommands()
    for name, svc in COMPOSE["services"].items():
        if "command" in svc and name not in ("postgres", "lb"):
            assert svc["command"][0] in commands, (name, svc["command"])
    entry_cmd = re.search(r'CMD \["(\w+)"', DOCKERFILE.split("ENTRYPOINT")[1])
    assert entry_cmd and entry_cmd.group(1) in commands


def test_entry_commands_run_outside_docker():
    for name, svc in COMPOSE["services"].items():
        if "command" not in svc or name in ("postgres", "lb"):
            continue
        out = subprocess.run(
            [sys.executable, "-m", "app", *svc["command"], "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, (name, out.stderr)


def test_settings_in_compose_are_real_and_documented():
    env = COMPOSE["x-telltale-env"]
    assert "${POSTGRES_PASSWORD:?" in env["TELLTALE_DATABASE_URL"]
    known = {f"TELLTALE_{k.upper()}" for k in Settings.model_fields}
    used = {
        k
        for svc in COMPOSE["services"].values()
        for k in (svc.get("environment") or {})
        if k.startswith("TELLTALE_")
    } | set(env)
    assert used <= known, used - known
    configuration = (DOCS / "operations" / "configuration.md").read_text()
    for var in sorted(known):  # every setting, not only compose's
        assert f"`{var}`" in configuration, f"{var} is not in docs/operations/configuration.md"


def test_dockerfile_is_multistage_nonroot_with_healthcheck_and_a_volume():
    assert DOCKERFILE.count("FROM ") >= 2 and " AS build" in DOCKERFILE
    assert re.search(r"^USER telltale$", DOCKERFILE, re.M)
    assert "HEALTHCHECK" in DOCKERFILE and "/readyz" in DOCKERFILE.split("HEALTHCHECK")[1]
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in DOCKERFILE
    for path in ("app", "detectors", "pipelines"):
        assert f"COPY {path} ./{path}" in DOCKERFILE
    assert re.search(r"^RUN pip install \.$", DOCKERFILE, re.M)  # not editable
    assert 'VOLUME ["/data"]' in DOCKERFILE and "sqlite:////data/" in DOCKERFILE
