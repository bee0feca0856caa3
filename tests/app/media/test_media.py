"""Media API: uploads (limits, types, idempotency), job status, stored images, retention."""

from __future__ import annotations

import io
import json
import os
import struct
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import Engine, func, select, update

from app.main import create_app
from app.media.retention import purge_expired
from app.models.base import utcnow
from app.models.media import MediaJob
from app.settings import Settings
from tests.conftest import KeyMaker, auth


def image_bytes(seed: int = 0, fmt: str = "JPEG", size: tuple[int, int] = (48, 32)) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


def upload(
    client: TestClient,
    key: str,
    files: list[bytes],
    sample_ids: list[str],
    stream: str = "cam",
    **extra: str,
) -> Any:
    return client.post(
        "/api/v1/media",
        headers=auth(key),
        data={"stream": stream, "sample_id": sample_ids, **extra},
        files=[("file", (f"f{i}.bin", data, "image/jpeg")) for i, data in enumerate(files)],
    )


def stored_files(settings: Settings) -> list[Path]:
    root = Path(settings.media_dir)
    return sorted(root.iterdir()) if root.is_dir() else []


def test_upload_images_status_and_image(
    client: TestClient, make_key: KeyMaker, settings: Settings
) -> None:
    ingest, read = make_key("ingest"), make_key("read")
    jpeg, png, webp = image_bytes(1), image_bytes(2, "PNG"), image_bytes(3, "WEBP")
    r = upload(client, ingest, [jpeg, png, webp], ["a", "b", "c"], trace_id="t1")
    assert r.status_code == 200, r.text
    jobs = r.json()["jobs"]
    assert [j["sample_id"] for j in jobs] == ["a", "b", "c"]
    assert {j["status"] for j in jobs} == {"pending"}
    assert len(stored_files(settings)) == 3

    status = client.get(f"/api/v1/media/{jobs[1]['id']}", headers=auth(read)).json()
    assert status["status"] == "pending" and status["attempts"] == 0
    assert status["content_type"] == "image/png" and (status["width"], status["height"]) == (48, 32)
    assert status["trace_id"] == "t1" and status["embedding_id"] is None

    by_sample = client.get("/api/v1/media/b/image?stream=cam", headers=auth(read))
    assert by_sample.status_code == 200 and by_sample.content == png
    assert by_sample.headers["content-type"] == "image/png"
    assert by_sample.headers["x-content-type-options"] == "nosniff"
    by_job = client.get(f"/api/v1/media/{jobs[2]['id']}/image", headers=auth(make_key("annotate")))
    assert by_job.status_code == 200 and by_job.content == webp
    assert client.get("/api/v1/media/a/image", headers=auth(read)).content == jpeg


def test_upload_is_idempotent_per_stream_and_sample(
    client: TestClient, make_key: KeyMaker, settings: Settings
) -> None:
    key = make_key("ingest")
    first = upload(client, key, [image_bytes(1)], ["s1"]).json()["jobs"][0]
    again = upload(client, key, [image_bytes(2)], ["s1"]).json()["jobs"][0]
    assert again["id"] == first["id"]
    assert len(stored_files(settings)) == 1  # the re-upload stored nothing
    other_stream = upload(client, key, [image_bytes(1)], ["s1"], stream="cam2").json()["jobs"][0]
    assert other_stream["id"] != first["id"]
    twice = upload(client, key, [image_bytes(5), image_bytes(6)], ["dup", "dup"]).json()["jobs"]
    assert twice[0]["id"] == twice[1]["id"]
    assert len(stored_files(settings)) == 3


def test_text_items(client: TestClient, make_key: KeyMaker, engine: Engine) -> None:
    key = make_key("ingest")
    items = [{"stream": "prompts", "sample_id": f"q{i}", "text": f"question {i}"} for i in range(3)]
    items[0]["trace_id"] = "tr-0"
    r = client.post("/api/v1/media", headers=auth(key), json={"items": items})
    assert r.status_code == 200, r.text
    ids = [j["id"] for j in r.json()["jobs"]]
    again = client.post("/api/v1/media", headers=auth(key), json={"items": items[:1]})
    assert again.json()["jobs"][0]["id"] == ids[0]
    with engine.connect() as conn:
        rows = conn.execute(select(MediaJob.kind, MediaJob.text, MediaJob.trace_id)).all()
    assert sorted(rows) == [
        ("text", "question 0", "tr-0"),
        ("text", "question 1", None),
        ("text", "question 2", None),
    ]
    bad = client.post("/api/v1/media", headers=auth(key), json={"items": [{"stream": "p"}]})
    assert bad.status_code == 422 and "items[0].text" in bad.json()["detail"]


def test_text_item_with_a_lone_surrogate_is_a_422_naming_the_field(
    client: TestClient, make_key: KeyMaker
) -> None:
    # "\ud800" is a valid JSON escape but no UTF-8 store can hold it: it was a 500.
    key = make_key("ingest")
    for field in ("text", "stream", "sample_id"):
        item = {"stream": "p", "sample_id": "s", "text": "t", field: "a\ud800b"}
        body = json.dumps({"items": [item]})  # keeps the escape as written
        r = client.post(
            "/api/v1/media",
            headers={**auth(key), "content-type": "application/json"},
            content=body,
        )
        assert r.status_code == 422, (field, r.text)
        assert f"items[0].{field}" in r.json()["detail"]
        assert "surrogate" in r.json()["detail"]


def test_limits_types_and_corrupt_headers(
    client: TestClient, make_key: KeyMaker, settings: Settings, db_url: str, tmp_path: Path
) -> None:
    key = make_key("ingest")
    gif = b"GIF89a" + b"\x00" * 64
    r = upload(client, key, [gif], ["g"])
    assert r.status_code == 415 and "JPEG, PNG or WebP" in r.json()["detail"]
    # The client's Content-Type is not believed: a PNG labelled image/gif is a PNG.
    r = client.post(
        "/api/v1/media",
        headers=auth(key),
        data={"stream": "cam", "sample_id": "p"},
        files={"file": ("x.gif", image_bytes(1, "PNG"), "image/gif")},
    )
    assert r.status_code == 200
    corrupt = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
    r = upload(client, key, [corrupt], ["c"])
    assert r.status_code == 422 and "corrupt PNG image header" in r.json()["detail"]
    # Pixel count is read from the header: a tiny JPEG that claims 10000 x 10000.
    jpeg = image_bytes(3)
    sof = jpeg.index(b"\xff\xc0")
    bomb = jpeg[: sof + 5] + struct.pack(">HH", 10_000, 10_000) + jpeg[sof + 9 :]
    r = upload(client, key, [bomb], ["b"])
    assert r.status_code == 413 and "pixels" in r.json()["detail"]
    assert r.json()["detail"].startswith("file[0]:")
    r = client.post(
        "/api/v1/media", headers={**auth(key), "content-type": "text/plain"}, content=b"hi"
    )
    assert r.status_code == 415
    assert len(stored_files(settings)) == 1  # nothing refused was stored

    small = Settings(
        database_url=db_url,
        scheduler_enabled=False,
        media_dir=str(tmp_path / "m2"),
        media_max_bytes=1000,
    )
    with TestClient(create_app(small, start_background=False)) as c2:
        big = image_bytes(4, "PNG", size=(64, 64))
        assert len(big) > 1000
        r = upload(c2, key, [big], ["big"])
        assert r.status_code == 413 and "exceeds 1000 bytes" in r.json()["detail"]


def test_field_errors_and_roles(client: TestClient, make_key: KeyMaker) -> None:
    ingest = make_key("ingest")
    r = upload(client, ingest, [image_bytes(1), image_bytes(2)], ["only-one"])
    assert r.status_code == 422 and r.json()["detail"].startswith("sample_id:")
    r = upload(client, ingest, [image_bytes(1)], ["a/b"])
    assert r.status_code == 422 and "'/'" in r.json()["detail"]
    r = client.post("/api/v1/media", headers=auth(ingest), data={"stream": "s", "sample_id": "x"})
    assert r.status_code in (415, 422)
    assert upload(client, make_key("read"), [image_bytes(1)], ["r"]).status_code == 403
    job = upload(client, ingest, [image_bytes(1)], ["ok"]).json()["jobs"][0]
    assert client.get(f"/api/v1/media/{job['id']}", headers=auth(ingest)).status_code == 403
    other = make_key("read", project="p2")
    assert client.get(f"/api/v1/media/{job['id']}", headers=auth(other)).status_code == 404
    assert client.get("/api/v1/media/ok/image", headers=auth(other)).status_code == 404
    assert client.get("/api/v1/media/999999", headers=auth(make_key("read"))).status_code == 404


TRAVERSALS = [
    "/api/v1/media/..%2F..%2Fetc%2Fpasswd/image",
    "/api/v1/media/..%2Fsecret/image",
    "/api/v1/media/%2E%2E/image",
    "/api/v1/media/..%5C..%5Csecret/image",
    "/api/v1/media/%2Fetc%2Fpasswd/image",
    "/api/v1/media/..%252F..%252Fsecret/image",
    "/api/v1/media/secret/image?stream=..%2F..",
    "/api/v1/media/..%2F1",
]


def test_path_traversal_is_impossible(
    client: TestClient, make_key: KeyMaker, settings: Settings, tmp_path: Path
) -> None:
    (tmp_path / "secret").write_bytes(b"top secret")
    key = make_key("admin")
    # A sample id that looks like a path is just a name: the file gets a generated name.
    r = upload(client, key, [image_bytes(1)], ["..\\..\\etc\\passwd"])
    assert r.status_code == 200
    assert [p.parent for p in stored_files(settings)] == [Path(settings.media_dir)]
    for path in TRAVERSALS:
        r = client.get(path, headers=auth(key))
        assert r.status_code in (404, 422), path
        assert b"top secret" not in r.content


def test_retention_deletes_old_files_and_rows(
    client: TestClient, make_key: KeyMaker, settings: Settings, engine: Engine
) -> None:
    key = make_key("ingest")
    jobs = upload(client, key, [image_bytes(i) for i in range(3)], ["old", "old2", "new"]).json()
    old_ids = [j["id"] for j in jobs["jobs"][:2]]
    now = utcnow()
    with engine.begin() as conn:
        conn.execute(
            update(MediaJob)
            .where(MediaJob.id.in_(old_ids))
            .values(created_at=now - timedelta(days=31))
        )
    orphan = Path(settings.media_dir) / ("ab" * 16 + ".jpg")
    orphan.write_bytes(b"x")
    old_time = (now - timedelta(days=40)).timestamp()
    os.utime(orphan, (old_time, old_time))
    unrelated = Path(settings.media_dir) / "README"
    unrelated.write_bytes(b"keep")
    os.utime(unrelated, (old_time, old_time))

    purged = purge_expired(engine, media_dir=settings.media_dir, retention_days=30, now=now)
    assert purged == {"jobs": 2, "files": 3}
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(MediaJob)) == 1
    names = [p.name for p in stored_files(settings)]
    assert len(names) == 2 and "README" in names
    read = make_key("read")
    assert client.get("/api/v1/media/old/image", headers=auth(read)).status_code == 404
    assert client.get("/api/v1/media/new/image", headers=auth(read)).status_code == 200


def test_labeling_image_url_serves_the_image(client: TestClient, make_key: KeyMaker) -> None:
    from app.labeling.samples import image_url
    from app.models.labeling import QueueItem

    ingest = make_key("ingest")
    jpeg, other = image_bytes(7), image_bytes(8)
    assert upload(client, ingest, [jpeg], ["photo 1?#"], stream="cam one").status_code == 200
    assert upload(client, ingest, [other], ["photo 1?#"], stream="cam two").status_code == 200
    url = image_url(QueueItem(sample_id="photo 1?#", stream="cam one", trace_id=None))
    assert url is not None
    r = client.get(url, headers=auth(make_key("annotate")))
    assert r.status_code == 200 and r.content == jpeg
