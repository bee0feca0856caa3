"""Alembic environment: the URL comes from the caller (app.migrate) or TELLTALE_DATABASE_URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

import app.models  # noqa: F401  (registers every table on Base.metadata)
from app.db import normalise_url
from app.models.base import Base
from app.private_files import create_sqlite_file
from app.retention.partitions import is_partition_name
from app.settings import get_settings

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return normalise_url(config.get_main_option("sqlalchemy.url") or get_settings().database_url)


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    create_sqlite_file(_url())  # 0600 before SQLite creates it 0644 (app.private_files)
    connectable = engine_from_config(
        {"sqlalchemy.url": _url()}, prefix="sqlalchemy.", poolclass=pool.NullPool
    )
    with connectable.connect() as conn:
        _run(conn)


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Autogenerate skips PostgreSQL's daily partitions: made by the retention job, not models."""
    return not (type_ == "table" and name is not None and is_partition_name(name))


def _run(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite needs batch mode for ALTERs
        compare_type=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
