"""One virtualenv per real instrumentation library, built by the suite and cached.

The libraries pin OpenTelemetry and ``openai`` releases that cannot share one environment
with each other or with Telltale's own (OpenLLMetry and OpenLIT pin the OTel SDK; OpenLIT
needs ``openai<3``; ``opentelemetry-util-genai`` 1.2b0/1.3b0 break ``openai-v2`` 2.4b0), so
each gets its own venv from its locked requirements in ``requirements/<name>.txt`` (and
``<name>.nodeps.txt``, installed with ``--no-deps``, for a package whose declared
dependencies pip cannot resolve). The venv
lives in ``.venv-instr/<name>-<key>`` (git-ignored; ``TELLTALE_INSTR_VENVS`` moves it), the
key hashing the requirements and the interpreter, so a changed pin builds a new one and an
unchanged one is reused between runs. A failed install raises: the tests then fail, they
never skip (no network is a failure here, as for any other missing dependency).

``make test`` builds them all before pytest (``python -m tests.instrumentations.envs``,
which exits non-zero and prints pip's error when an install fails), so the suite's time is
the tests' own; a test run without that step still builds what it needs on first use.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REQUIREMENTS = HERE / "requirements"
INSTALL_TIMEOUT_S = 900


def names() -> list[str]:
    """Every environment: one per ``requirements/<name>.txt``."""
    return sorted(p.stem for p in REQUIREMENTS.glob("*.txt") if "." not in p.stem)


def cache_dir() -> Path:
    return Path(os.environ.get("TELLTALE_INSTR_VENVS") or ROOT / ".venv-instr")


def env_key(name: str) -> str:
    digest = hashlib.sha256((REQUIREMENTS / f"{name}.txt").read_bytes())
    no_deps = REQUIREMENTS / f"{name}.nodeps.txt"
    if no_deps.exists():
        digest.update(no_deps.read_bytes())
    digest.update(f"{sys.version_info[:2]}{sys.platform}".encode())
    return digest.hexdigest()[:12]


def python_for(name: str) -> Path:
    """The interpreter of the ``name`` environment, installing it first when needed."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / f"{name}-{env_key(name)}"
    python, stamp = venv / "bin" / "python", venv / ".installed"
    with open(cache / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test sessions build it once
        if stamp.exists():
            return python
        for old in cache.glob(f"{name}-*"):
            shutil.rmtree(old, ignore_errors=True)
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", str(venv)], f"creating the {name} venv")
        _pip(python, ["-r", str(REQUIREMENTS / f"{name}.txt")],
             f"installing the {name} instrumentation requirements")  # fmt: skip
        no_deps = REQUIREMENTS / f"{name}.nodeps.txt"
        if no_deps.exists():
            _pip(python, ["--no-deps", "-r", str(no_deps)],
                 f"installing the {name} packages whose own pins cannot be resolved")  # fmt: skip
        stamp.write_text(env_key(name))
    return python


def _pip(python: Path, args: list[str], what: str) -> None:
    """``pip install`` quietly into the venv of ``python``."""
    base = [str(python), "-m", "pip", "install", "--no-input", "-q", "--disable-pip-version-check"]
    _run([*base, *args], what)


def _run(cmd: list[str], what: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{what}: timed out after {INSTALL_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        errors = [ln for ln in done.stderr.splitlines() if not ln.startswith("WARNING: Location")]
        raise RuntimeError(f"{what} failed ({done.returncode}):\n" + "\n".join(errors[-40:]))


def main() -> int:
    """Build every environment that is missing or out of date, two at a time."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(python_for, name) for name in names()}
    failed = 0
    for name, future in futures.items():
        if (error := future.exception()) is not None:
            failed += 1
            print(f"instrumentation venv {name}: FAILED\n{error}", file=sys.stderr)
        else:
            print(f"instrumentation venv {name}: {future.result().parents[1]}")
    took = time.monotonic() - started
    if failed:
        print(
            f"{failed} of {len(futures)} instrumentation venvs failed ({took:.0f} s)",
            file=sys.stderr,
        )
        return 1
    print(f"instrumentation venvs ready in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
