"""``telltale rollups``: catch the rollups up on stored history (``backfill``), or rebuild
what is marked now instead of waiting for the scheduler's job (``rebuild``)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta

HELP = "backfill or rebuild the per-bucket rollups alert rules read"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["backfill", "rebuild"])
    p.add_argument("--project", help="backfill: the project (default: every project)")
    p.add_argument(
        "--days", type=float, default=30.0, help="backfill: how far back (default 30, a preview's)"
    )
    p.add_argument(
        "--no-rebuild",
        action="store_true",
        help="backfill: only mark; the scheduler's job rebuilds",
    )


def run(args: argparse.Namespace) -> int:
    from sqlalchemy import select

    from app.db import make_engine
    from app.models import Project
    from app.rollups.job import backfill, rebuild_dirty
    from app.settings import get_settings

    engine = make_engine(get_settings().database_url)
    try:
        marked = 0
        if args.action == "backfill":
            since = datetime.now(UTC) - timedelta(days=args.days)
            with engine.connect() as conn:
                q = select(Project.id, Project.name)
                if args.project:
                    q = q.where(Project.name == args.project)
                projects = conn.execute(q).all()
            if args.project and not projects:
                print(f"no project named {args.project!r}")
                return 2
            for pid, _name in projects:
                marked += backfill(engine, project_id=pid, since=since)
        rebuilt = 0 if args.no_rebuild else rebuild_dirty(engine)
        print(json.dumps({"marked": marked, "rebuilt": rebuilt}))
        return 0
    finally:
        engine.dispose()
