"""Files that hold prompts, keys and secrets are created readable by their owner alone.

The SQLite database holds every prompt and answer, the keys' hashes and the installation's
session-signing secret; uploaded media are the users' images. Left to the process umask
(022 on most systems) they would be created 0644, readable by every account on the host.

* The SQLite file is created 0600 before SQLite opens it. SQLite creates the ``-wal``,
  ``-shm`` and ``-journal`` files with the permissions of the database file
  (``robust_open`` in its ``os_unix.c``), so they follow.
* Media folders are created 0700 and media files 0600.

Only what Telltale creates is set: an existing file or folder keeps the mode its operator
gave it (a backup agent's group may read it on purpose).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.engine import make_url

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def sqlite_file(url: str) -> Path | None:
    """The file an SQLite URL names; None for in-memory and URI-style databases.

    >>> sqlite_file("sqlite:///./telltale.db")
    PosixPath('telltale.db')
    >>> sqlite_file("sqlite://") is None, sqlite_file("postgresql://h/db") is None
    (True, True)
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.query.get("uri"):
        return None
    if not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def create_sqlite_file(url: str) -> None:
    """Create the database file of ``url`` empty and 0600, unless it exists (an empty file
    is an empty SQLite database)."""
    path = sqlite_file(url)
    if path is None:
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        pass  # an existing database, or another process created it first


def make_folder(path: str | Path) -> Path:
    """``path`` as a folder, created 0700 when missing (its parents as the umask says)."""
    folder = Path(path)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=FOLDER_MODE)
    except FileExistsError:
        pass
    return folder


def create_file(path: str | Path) -> BinaryIO:
    """A new file at ``path``, 0600, open for writing; refuses an existing file or link
    (``O_EXCL`` fails on any existing name, a symbolic link included)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    return os.fdopen(fd, "wb")
