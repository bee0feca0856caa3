"""The ``telltale`` command: serve, migrate, create keys, and run the background roles."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Protocol

from app.demo import cli as demo_cli
from app.media import cli as media_cli
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


def _keys_create(args: argparse.Namespace) -> int:
    from app import migrate
    from app.db import make_engine, make_sessionmaker
    from app.keys import create_key

    settings = get_settings()
    if settings.is_sqlite:
        migrate.upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    try:
        with make_sessionmaker(engine)() as session:
            key = create_key(session, project_name=args.project, role=args.role, name=args.name)
            session.commit()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    print(key)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="telltale", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API (and the scheduler) with uvicorn")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info")
    serve.add_argument("--workers", type=int, default=1, help="API processes (stateless)")
    serve.add_argument(
        "--migrate", action="store_true", help="upgrade the database first (always on SQLite)"
    )
    serve.set_defaults(func=_serve)

    db = sub.add_parser("db", help="apply or roll back migrations")
    db.add_argument("action", choices=["upgrade", "downgrade"])
    db.add_argument("revision", nargs="?", help="target (default: head / one step down)")
    db.set_defaults(func=_db)

    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key; prints only the key")
    create.add_argument("--project", required=True)
    create.add_argument("--role", required=True, choices=["ingest", "read", "annotate", "admin"])
    create.add_argument("--name", default="")
    create.set_defaults(func=_keys_create)

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
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
