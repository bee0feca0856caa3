"""telltale: reliability monitoring for LLM agents.

Start with `telltale init --project NAME` (keys, default monitors, the OpenTelemetry
environment block), then `telltale serve`. The database is TELLTALE_DATABASE_URL.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import sys
from typing import Protocol

from app import project_cli
from app.demo import cli as demo_cli
from app.evaluators import cli as evaluate_cli
from app.media import cli as media_cli
from app.project_cli import database_label
from app.rollups import cli as rollups_cli
from app.scheduler import cli as scheduler_cli
from app.settings import get_settings


class Role(Protocol):
    """A subcommand module: its help line, its arguments and what it runs."""

    HELP: str

    def add_arguments(self, p: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


ROLES: dict[str, Role] = {
    "scheduler": scheduler_cli,
    "embed-worker": media_cli,
    "demo": demo_cli,
    "rollups": rollups_cli,
    "evaluate": evaluate_cli,
}


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app import migrate
    from app.main import create_app

    settings = get_settings()
    if settings.is_sqlite or args.migrate:
        migrate.upgrade(settings.database_url)
    if args.workers > 1:
        # Several processes: uvicorn imports the factory in each worker.
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=args.log_level,
            access_log=False,
        )
        return 0
    app = create_app(settings)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    return 0


def _db(args: argparse.Namespace) -> int:
    from app import migrate

    url = get_settings().database_url
    if args.action == "upgrade":
        migrate.upgrade(url, args.revision or "heads")
    else:
        migrate.downgrade(url, args.revision or "-1")
    return 0


def _version() -> str:
    try:
        return importlib.metadata.version("telltale")
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        return "(not installed)"


def _database_url() -> str:
    """The URL the settings give, or the variable's raw text when the settings refuse it."""
    try:
        return get_settings().database_url
    except Exception:
        return os.environ.get("TELLTALE_DATABASE_URL", "sqlite:///./telltale.db")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="telltale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"telltale {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    database = database_label(_database_url())
    serve = sub.add_parser(
        "serve",
        help="run the API, the web UI and the scheduler with uvicorn",
        description=f"Serve the API, the web UI and (unless TELLTALE_SCHEDULER_ENABLED=false) "
        f"the scheduler. Opens the database TELLTALE_DATABASE_URL names, now {database}; "
        "a SQLite file is created and migrated on start, PostgreSQL with --migrate.",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--workers", type=int, default=1, help="API processes (stateless)")
    serve.add_argument(
        "--migrate", action="store_true", help="upgrade the database first (always on SQLite)"
    )
    serve.set_defaults(func=_serve)

    db = sub.add_parser(
        "db",
        help="apply or roll back migrations",
        description=f"Migrate the database TELLTALE_DATABASE_URL names, now {database}.",
    )
    db.add_argument("action", choices=["upgrade", "downgrade"])
    db.add_argument("revision", nargs="?", help="target (default: head / one step down)")
    db.set_defaults(func=_db)

    project_cli.add_commands(sub)

    for name, role in ROLES.items():
        p = sub.add_parser(name, help=role.HELP)
        role.add_arguments(p)
        p.set_defaults(func=role.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    args = build_parser().parse_args(argv)
    quiet_library_logs(args.command)
    return int(args.func(args) or 0)


def quiet_library_logs(command: str) -> None:
    """Libraries' INFO lines that are noise to the command being run."""
    # Alembic's INFO lines are news only to `db` (and to `serve`'s start-up log); `keys`,
    # `init` and `monitors` print what a person reads, and its plugin lines are noise always.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    if command not in ("db", "serve"):
        logging.getLogger("alembic").setLevel(logging.WARNING)
    # APScheduler says "Running job ..." and "... executed successfully" at INFO for every
    # tick (about 36 lines a minute, naming our wrapper, not the monitor): its warnings
    # (a missed run, a job still running) stay, and our own lines name the job.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


if __name__ == "__main__":
    sys.exit(main())
