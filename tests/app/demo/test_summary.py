"""What the demo prints: every link answers, and no line runs past a terminal's width."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.demo.summary import banner
from app.main import create_app
from app.settings import Settings


def test_every_link_in_the_banner_is_served(tmp_path):
    base = "http://testserver"
    lines = banner(
        base_url=base, db_url="sqlite:///x.db", keys={"admin": "tt_x"}, reused=False, hint=True
    )
    urls = sorted({u.rstrip(").,") for u in re.findall(rf"{base}\S*", "\n".join(lines))})
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}", scheduler_enabled=False),
        start_background=False,
    )
    with TestClient(app) as client:
        for url in urls:
            r = client.get(url, follow_redirects=False)
            assert r.status_code != 404, url
