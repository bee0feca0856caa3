"""The image's steps without a Docker engine: build the wheel from what the Dockerfile copies,
install it (not editable) into a fresh virtualenv, and run it from a folder that holds no
source: `telltale db upgrade` on SQLite and PostgreSQL, `telltale init`, `telltale serve`,
then `/readyz`, a page and a static asset.

The fresh venv gets its dependencies from the test's own environment through a `.pth` line
(so it takes seconds and needs no network); that line adds the directory only, so the test
environment's editable install of this tree is not seen, and the test checks the `app`
package the venv imports is the installed one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import empty_database, free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def _build_stage_sources() -> list[str]:
    """What the Dockerfile's build stage copies from the repository before `pip install .`."""
    build = DOCKERFILE.split(" AS runtime")[0]
    return [
        p for line in re.findall(r"^COPY (?!--from)(.+) \S+$", build, re.M) for p in line.split()
    ]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    sources = _build_stage_sources()
    assert {"pyproject.toml", "app", "detectors", "pipelines"} <= set(sources), sources
    for name in sources:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, src / name)
    pip = [sys.executable, "-m", "pip"]
    started = time.monotonic()
    _check([*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", str(src), "-w", str(work)])
    wheel = next(work.glob("telltale-*.whl"))
    base = getattr(sys, "_base_executable", sys.executable)
    _check([base, "-m", "venv", "--without-pip", str(work / "venv")])
    python = work / "venv" / "bin" / "python"
    site = _check([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    Path(site.strip(), "_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    _check([*pip, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)])
    print(f"wheel built and installed in {time.monotonic() - started:.1f} s")
    yield work / "venv"


def _check(cmd: list[str], **kw: object) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)  # type: ignore[call-overload]
    assert out.returncode == 0, (cmd, out.stdout[-2000:], out.stderr[-2000:])
    return str(out.stdout)


def test_the_installed_package_is_the_wheel_not_this_tree(venv: Path, tmp_path: Path):
    where = _check([str(venv / "bin" / "python"), "-c", "import app; print(app.__file__)"],
                   cwd=tmp_path)  # fmt: skip
    assert where.startswith(str(venv)), where
    installed = Path(where.strip()).parent
    assert (installed / "migrations" / "env.py").is_file()
    assert any((installed / "migrations" / "versions").glob("0001_*.py"))
    assert (installed / "web" / "static" / "app.css").is_file()
    # the model price table, read from beside its module (app/pricing/table.py)
    found = _check([str(venv / "bin" / "python"), "-c", "from app.pricing.table import "
                    "shipped_table; print(shipped_table().find('gpt-4o').model)"], cwd=tmp_path)  # fmt: skip
    assert found.strip() == "gpt-4o"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_upgrade_init_and_serve_from_another_folder(venv, backend, tmp_path, request):
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    url = empty_database(backend, tmp_path, request)
    env = dict(os.environ, TELLTALE_DATABASE_URL=url, TELLTALE_SCHEDULER_ENABLED="false")
    env.pop("PYTHONPATH", None)
    telltale = str(venv / "bin" / "telltale")

    _check([telltale, "db", "upgrade"], cwd=run_dir, env=env)
    init = subprocess.run([telltale, "init", "--project", "trial"], cwd=run_dir, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert init.returncode == 0, init.stderr[-2000:]
    admin = re.search(r"admin key[^:]*: (tt_\S+)", init.stderr)  # never in the env block
    assert admin and "export OTEL_EXPORTER_OTLP_ENDPOINT=" in init.stdout

    port = free_port()
    server = subprocess.Popen(
        [telltale, "serve", "--port", str(port)],
        cwd=run_dir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        ready = _wait_ready(base, server)
        assert ready.json() == {"status": "ready"}
        login = httpx.get(f"{base}/login")
        assert login.status_code == 200 and "<form" in login.text
        css = httpx.get(f"{base}/static/app.css")
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert len(css.content) > 100
        monitors = httpx.get(
            f"{base}/api/v1/monitors", headers={"Authorization": f"Bearer {admin.group(1)}"}
        )
        assert len(monitors.json()["monitors"]) == 10
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert "Traceback" not in err, err[-3000:]
    assert not list(run_dir.glob("migrations")) and not (run_dir / "app").exists()


def _wait_ready(base: str, server: subprocess.Popen[str]) -> httpx.Response:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(
                f"serve exited {server.returncode}: {server.stderr.read()[-3000:]}"
            )  # type: ignore[union-attr]
        try:
            r = httpx.get(f"{base}/readyz", timeout=2)
            if r.status_code == 200:
                return r
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("telltale serve did not become ready in 60 s")
