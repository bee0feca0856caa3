"""The operator's project commands: `telltale init`, `keys create|list|revoke`, `monitors defaults`.

Each opens the database the settings name (on SQLite it migrates it first, as `serve` does;
PostgreSQL must be at the latest migration, else the command says to run `telltale db
upgrade`), does one thing in one transaction and prints what a person needs next.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.keys import ROLES
from app.settings import Settings, get_settings


class CommandError(Exception):
    """A refusal the command prints as ``error: ...`` and exits 2 on."""


@contextmanager
def _session(settings: Settings) -> Iterator[Session]:
    from app import migrate
    from app.db import make_engine, make_sessionmaker

    if settings.is_sqlite:
        migrate.upgrade(settings.database_url)
    engine = make_engine(settings.database_url, pool_size=1)
    try:
        try:
            at_head = migrate.is_at_head(engine, settings.database_url)
        except Exception as exc:  # unreachable server, wrong credentials
            raise CommandError(f"cannot open the database: {exc.__class__.__name__}") from None
        if not at_head:
            raise CommandError("the database is not at the latest migration: telltale db upgrade")
        with make_sessionmaker(engine)() as session:
            yield session
            session.commit()
    finally:
        engine.dispose()


def _project_id(session: Session, name: str) -> int:
    from app.models import Project

    project_id = session.scalar(select(Project.id).where(Project.name == name))
    if project_id is None:
        raise CommandError(f"no project named {name!r} (telltale init --project {name})")
    return project_id


def _init(args: argparse.Namespace) -> int:
    from app.keys import create_key
    from app.monitors.defaults import create_defaults
    from app.onboarding import OtelEnv

    settings = get_settings()
    with _session(settings) as session:
        ingest = create_key(session, project_name=args.project, role="ingest", name="agent")
        admin = create_key(session, project_name=args.project, role="admin", name="operator")
        monitors = create_defaults(session, project_id=_project_id(session, args.project))
    endpoint = args.endpoint or settings.public_url
    env = OtelEnv(
        endpoint=endpoint,
        key=ingest,
        service_name=args.service_name or args.project,
        service_version=args.service_version,
    )
    # The block goes where agents `source` it (`> telltale.env`): it holds the ingest key
    # alone. The admin key goes to the terminal (stderr), never into that file.
    print(
        f"admin key for project {args.project!r} (log in to the web UI, manage monitors and "
        f"keys; shown once, keep it out of the agent's environment): {admin}",
        file=sys.stderr,
    )
    print(f"# Project {args.project!r} on {database_label(settings.database_url)}")
    if not args.endpoint and "public_url" not in settings.model_fields_set:
        # Nothing said where agents reach this server: say the guess is a default.
        print(
            f"# endpoint {endpoint} is the default: pass --endpoint URL (or set "
            "TELLTALE_PUBLIC_URL) where agents reach this server elsewhere"
        )
    # The key once, in the block: a file written from this output holds it in clear.
    print(
        "# This block holds the project's ingest key (it only sends data): keep a file made "
        "from it (telltale.env) out of version control"
    )
    print(f"# {len(monitors)} default monitors: {first_verdicts_line()}")
    print("# Paste into the environment of the process that runs your agent:")
    print(env.shell())
    return 0


def _keys_create(args: argparse.Namespace) -> int:
    from app.keys import create_key

    with _session(get_settings()) as session:
        key = create_key(session, project_name=args.project, role=args.role, name=args.name)
    print(key)
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    from app.keys import list_keys

    with _session(get_settings()) as session:
        keys = list_keys(session, project_id=_project_id(session, args.project))
        rows = [
            (str(k.id), k.role, k.prefix + "…", k.name, _when(k.created_at), _when(k.revoked_at))
            for k in keys
        ]
    _table(("id", "role", "key", "name", "created", "revoked"), rows)
    return 0


def _keys_revoke(args: argparse.Namespace) -> int:
    from app.keys import revoke_key

    with _session(get_settings()) as session:
        project_id = _project_id(session, args.project)
        key = revoke_key(session, project_id=project_id, key_id=args.id, now=datetime.now(UTC))
        if key is None:
            raise CommandError(f"project {args.project!r} has no key {args.id}")
        print(f"key {key.id} ({key.role}, {key.prefix}…) revoked {_when(key.revoked_at)}")
    return 0


def _monitors_defaults(args: argparse.Namespace) -> int:
    from app.monitors.defaults import create_defaults

    with _session(get_settings()) as session:
        monitors = create_defaults(
            session,
            project_id=_project_id(session, args.project),
            interval_seconds=args.interval_seconds,
        )
        rows = [(str(m.id), m.failure_mode, m.name) for m in monitors]
    _table(("id", "mode", "name"), rows)
    return 0


def _when(t: datetime | None) -> str:
    return "" if t is None else t.strftime("%Y-%m-%d %H:%M:%SZ")


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def database_label(url: str) -> str:
    """The URL without its password, for help texts and messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "an unparsable TELLTALE_DATABASE_URL"


def _guarded(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except (CommandError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2

    return run


def _positive(text: str) -> int:
    """A positive integer that fits the int4 columns (key ids, intervals)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 < value < 2**31:
        raise argparse.ArgumentTypeError(f"must be between 1 and {2**31 - 1}")
    return value


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `init`, `keys` and `monitors` to the `telltale` parser."""
    init = sub.add_parser(
        "init",
        help="create a project, its keys and default monitors; print the OTel env block",
        description="Create the project (if new), an ingest key for the agent and an admin key "
        "for you, the default monitors, and print the OpenTelemetry environment block (with "
        "the ingest key) on stdout and the admin key on stderr. "
        "Run again, it makes new keys and keeps the monitors.",
    )
    init.add_argument("--project", required=True)
    init.add_argument("--endpoint", help="this server's URL as agents reach it "
                      "(default: TELLTALE_PUBLIC_URL)")  # fmt: skip
    init.add_argument("--service-name", help="OTEL_SERVICE_NAME (default: the project's name)")
    init.add_argument("--service-version", default="v1", help="service.version")
    init.set_defaults(func=_guarded(_init))

    keys = sub.add_parser("keys", help="create, list and revoke API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key; prints only the key")
    create.add_argument("--project", required=True, help="created when new")
    create.add_argument("--role", required=True, choices=list(ROLES))
    create.add_argument("--name", default="")
    create.set_defaults(func=_guarded(_keys_create))
    listing = keys_sub.add_parser("list", help="a project's keys (first characters only)")
    listing.add_argument("--project", required=True)
    listing.set_defaults(func=_guarded(_keys_list))
    revoke = keys_sub.add_parser("revoke", help="revoke a key by its id (from keys list)")
    revoke.add_argument("--project", required=True)
    revoke.add_argument("id", type=_positive)
    revoke.set_defaults(func=_guarded(_keys_revoke))

    monitors = sub.add_parser("monitors", help="manage monitors")
    monitors_sub = monitors.add_subparsers(dest="monitors_command", required=True)
    defaults = monitors_sub.add_parser(
        "defaults", help="create the default monitors the project lacks (seven modes, OUTCOME)"
    )
    defaults.add_argument("--project", required=True)
    defaults.add_argument("--interval-seconds", type=_positive, default=900)
    defaults.set_defaults(func=_guarded(_monitors_defaults))


def first_verdicts_line() -> str:
    """When the defaults speak, from the one place it is computed (app.web.health)."""
    from app.web.health import first_verdicts_words

    return f"first verdicts {first_verdicts_words()}"
