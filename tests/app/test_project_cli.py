"""`telltale init`, `keys create|list|revoke`, `monitors defaults`, `--version`, `serve --help`."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.cli import build_parser
from app.db import make_engine
from app.main import create_app
from app.models import Monitor
from app.settings import Settings
from tests.conftest import auth, empty_database


def _telltale(*args: str, db: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=dict(os.environ, TELLTALE_DATABASE_URL=db, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _exports(stdout: str) -> dict[str, str]:
    """The `export NAME=value` lines as the shell would read them."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("export "):
            name, value = line.removeprefix("export ").split("=", 1)
            out[name] = shlex.split(value)[0]
    return out


def test_init_makes_working_keys_default_monitors_and_the_env_block(db_url):
    out = _telltale(
        "init", "--project", "shop", "--endpoint", "https://telltale.example/", db=db_url
    )
    assert out.returncode == 0, out.stderr
    env = _exports(out.stdout)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "https://telltale.example"
    assert env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == "span_only"
    ingest = env["OTEL_EXPORTER_OTLP_HEADERS"].removeprefix("x-api-key=")
    # The admin key is the one line on stderr (no alembic or other log lines), never in
    # stdout, which is what agents `source` (`> telltale.env`).
    admin = re.fullmatch(r"admin key for project 'shop' \([^)]*\): (tt_\S+)\n", out.stderr)
    assert admin and ingest.startswith("tt_")
    assert admin.group(1) not in out.stdout and "admin" not in out.stdout
    with TestClient(create_app(Settings(database_url=db_url), start_background=False)) as c:
        # The admin key reads and manages; the ingest key only sends.
        monitors = c.get("/api/v1/monitors", headers=auth(admin.group(1))).json()["monitors"]
        assert c.get("/api/v1/monitors", headers=auth(ingest)).status_code == 403
        batch = {"events": [{"id": "e1", "type": "trace", "body": {"trace_id": "t1"}}]}
        assert c.post("/api/v1/ingest", json=batch, headers=auth(ingest)).json()["accepted"] == 1
    assert sorted(m["failure_mode"] for m in monitors) == [
        "EARLY", "FM-1", "FM-2", "FM-3", "FM-4", "FM-5", "FM-6", "FM-7", "OUTCOME", "SILENCE",
    ]  # fmt: skip

    again = _telltale("init", "--project", "shop", db=db_url)
    assert again.returncode == 0, again.stderr
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(Monitor)) == 10  # kept, not doubled
    finally:
        engine.dispose()


def test_keys_list_and_revoke(db_url):
    key = _telltale("keys", "create", "--project", "shop", "--role", "read", db=db_url)
    assert key.returncode == 0 and key.stderr == "", key.stderr
    listed = _telltale("keys", "list", "--project", "shop", db=db_url)
    assert listed.returncode == 0 and listed.stderr == ""
    header, row = listed.stdout.splitlines()
    assert header.split() == ["id", "role", "key", "name", "created", "revoked"]
    key_id = row.split()[0]
    assert row.split()[1] == "read" and key.stdout.strip()[:10] in row
    assert key.stdout.strip() not in listed.stdout  # never the whole key

    revoked = _telltale("keys", "revoke", "--project", "shop", key_id, db=db_url)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout, revoked.stderr
    with TestClient(create_app(Settings(database_url=db_url), start_background=False)) as c:
        assert c.get("/api/v1/traces", headers=auth(key.stdout.strip())).status_code == 401
    relisted = _telltale("keys", "list", "--project", "shop", db=db_url).stdout
    assert len(re.findall(r"\d\d:\d\d:\d\dZ", relisted.splitlines()[1])) == 2  # created, revoked


def test_refusals_are_one_line_and_exit_2(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    for args, said in [
        (("keys", "list", "--project", "nope"), "no project named 'nope'"),
        (("keys", "revoke", "--project", "nope", "1"), "no project named 'nope'"),
        (("monitors", "defaults", "--project", "nope"), "no project named 'nope'"),
        (("keys", "create", "--project", " ", "--role", "read"), "project name"),
    ]:
        out = _telltale(*args, db=db)
        assert out.returncode == 2 and said in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert _telltale("keys", "create", "--project", "shop", "--role", "read", db=db).returncode == 0
    for bad in ("0", "-3", "x", str(2**31)):  # refused by the parser, before any database
        with pytest.raises(SystemExit) as refused:
            build_parser().parse_args(["keys", "revoke", "--project", "shop", bad])
        assert refused.value.code == 2
        assert "between 1 and" in capsys.readouterr().err or bad == "x"
    out = _telltale("keys", "revoke", "--project", "shop", "99", db=db)
    assert out.returncode == 2 and "has no key 99" in out.stderr


def test_commands_refuse_an_unmigrated_postgresql(tmp_path, request):
    url = empty_database("postgresql", tmp_path, request)
    out = _telltale("init", "--project", "shop", db=url)
    assert out.returncode == 2 and "telltale db upgrade" in out.stderr, out.stderr
    down = _telltale("keys", "list", "--project", "x", db="postgresql://postgres@127.0.0.1:1/no")
    assert down.returncode == 2 and "cannot open the database" in down.stderr


def test_monitors_defaults_lists_the_ten(tmp_path):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    _telltale("keys", "create", "--project", "shop", "--role", "admin", db=db)
    out = _telltale("monitors", "defaults", "--project", "shop", "--interval-seconds", "600", db=db)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    modes = [line.split()[1] for line in out.stdout.splitlines()[1:]]
    assert modes == [
        "FM-1",
        "FM-2",
        "FM-3",
        "FM-4",
        "FM-5",
        "FM-6",
        "FM-7",
        "OUTCOME",
        "SILENCE",
        "EARLY",
    ]


def test_version_and_serve_help_name_what_they_should(tmp_path):
    version = _telltale("--version", db="sqlite:///x.db")
    assert version.returncode == 0 and re.fullmatch(r"telltale \d+\.\d+\.\S+\n", version.stdout)
    url = "postgresql+psycopg://telltale:s3cret@db.internal:5432/telltale"
    helped = _telltale("serve", "--help", db=url)
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    assert "postgresql+psycopg://telltale:***@db.internal:5432/telltale" in text
    assert "s3cret" not in text
    top = _telltale("--help", db=url).stdout
    assert "``" not in top and "init" in top


def test_init_names_the_project_and_the_server_it_was_told(tmp_path):
    db = f"sqlite:///{tmp_path / 'init.db'}"
    told = _telltale("init", "--project", "shop", db=db, TELLTALE_PUBLIC_URL="http://tt.local:9000")
    assert told.returncode == 0, told.stderr
    env = _exports(told.stdout)
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://tt.local:9000"
    assert env["OTEL_SERVICE_NAME"] == "shop"
    assert "is the default" not in told.stdout
    # Nothing said where the server is: the default is printed as such, with the option.
    untold = _telltale("init", "--project", "shop", db=db, TELLTALE_PUBLIC_URL="")
    assert untold.returncode == 0, untold.stderr
    assert "--endpoint" in untold.stdout
    named = _telltale("init", "--project", "shop", "--service-name", "checkout", db=db)
    assert _exports(named.stdout)["OTEL_SERVICE_NAME"] == "checkout"


def test_the_env_file_holds_the_key_once_says_so_and_is_ignored(tmp_path):
    from pathlib import Path

    out = _telltale("init", "--project", "shop", db=f"sqlite:///{tmp_path / 'init.db'}")
    assert out.returncode == 0, out.stderr
    key = _exports(out.stdout)["OTEL_EXPORTER_OTLP_HEADERS"].removeprefix("x-api-key=")
    assert out.stdout.count(key) == 1
    assert "holds the project's ingest key" in out.stdout
    root = Path(__file__).resolve().parents[2]
    ignored = subprocess.run(["git", "check-ignore", "-q", "telltale.env"], cwd=root)
    assert ignored.returncode == 0, "telltale.env is not in .gitignore"
