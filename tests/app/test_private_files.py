"""What Telltale creates on disk (the SQLite database and its WAL, media files and their
folder) is readable by its owner alone, whatever the process umask lets through."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from app import migrate
from app.db import make_engine
from app.media.store import save_image


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The usual umask (022), under which files are created 0644 unless asked otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_a_new_sqlite_database_its_wal_and_shm_are_owner_only(
    tmp_path: Path, open_umask: None
) -> None:
    db = tmp_path / "telltale.db"
    migrate.upgrade(f"sqlite:///{db}")  # `telltale serve` and `init` create it so
    engine = make_engine(f"sqlite:///{db}")
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE probe (x INTEGER)"))
            conn.execute(text("INSERT INTO probe VALUES (1)"))
        created = sorted(p.name for p in tmp_path.iterdir())
        assert created == ["telltale.db", "telltale.db-shm", "telltale.db-wal"]
        assert {name: _mode(tmp_path / name) for name in created} == dict.fromkeys(created, 0o600)
    finally:
        engine.dispose()


def test_an_engine_on_a_new_file_creates_it_owner_only(tmp_path: Path, open_umask: None) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'scratch.db'}")
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        assert _mode(tmp_path / "scratch.db") == 0o600
    finally:
        engine.dispose()


def test_media_files_and_their_folder_are_owner_only(tmp_path: Path, open_umask: None) -> None:
    media = tmp_path / "data" / "media"
    name = save_image(media, b"\x89PNG\r\n\x1a\n...", ext=".png")
    assert _mode(media) == 0o700
    assert _mode(media / name) == 0o600
    assert [p.name for p in media.iterdir()] == [name]  # no temporary file left behind
