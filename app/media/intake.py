"""Turning uploads into media jobs: field checks, image checks, files saved, jobs created."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.media.jobs import JobSpec, SubmittedJob, existing_jobs, submit_jobs
from app.media.store import ImageInfo, MediaRejected, check_image, delete_image, save_image
from app.models.media import MediaJob
from app.request_model import unstorable

MAX_FILES = 64
MAX_TEXT_CHARS = 20_000


@dataclass(frozen=True)
class ImageUpload:
    data: bytes
    stream: str
    sample_id: str
    trace_id: str | None
    info: ImageInfo


def _name(value: Any, field: str, *, max_len: int, image: bool = False) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MediaRejected(422, f"{field}: required, a non-empty string")
    if len(value) > max_len:
        raise MediaRejected(422, f"{field}: longer than {max_len} characters")
    if any(ord(c) < 32 for c in value):
        raise MediaRejected(422, f"{field}: must not contain control characters")
    problem = unstorable(value)
    if problem is not None:
        raise MediaRejected(422, f"{field}: {problem}")
    if image and "/" in value:
        # The image is served at /api/v1/media/{sample_id}/image: one path segment.
        raise MediaRejected(422, f"{field}: must not contain '/'")
    return value


def _per_file(values: list[str], n: int, field: str, *, required: bool) -> list[str | None]:
    if not values:
        if required:
            raise MediaRejected(422, f"{field}: required (one per file, or one for all)")
        return [None] * n
    if len(values) == n:
        return list(values)
    if len(values) == 1:
        return [values[0]] * n
    raise MediaRejected(422, f"{field}: {len(values)} values for {n} files; send one per file")


def image_uploads(
    files: Sequence[bytes],
    *,
    streams: list[str],
    sample_ids: list[str],
    trace_ids: list[str],
    max_bytes: int,
    max_pixels: int,
) -> list[ImageUpload]:
    """Check every file and its fields; the first problem refuses the whole request."""
    n = len(files)
    if n > MAX_FILES:
        raise MediaRejected(413, f"file: {n} files exceed the limit of {MAX_FILES} per request")
    if len(sample_ids) != n:
        raise MediaRejected(
            422, f"sample_id: {len(sample_ids)} values for {n} files; send one per file"
        )
    stream_of = _per_file(streams, n, "stream", required=True)
    trace_of = _per_file(trace_ids, n, "trace_id", required=False)
    out = []
    for i, data in enumerate(files):
        info = check_image(data, max_bytes=max_bytes, max_pixels=max_pixels, field=f"file[{i}]")
        trace = trace_of[i]
        out.append(
            ImageUpload(
                data=data,
                stream=_name(stream_of[i], f"stream[{i}]", max_len=128),
                sample_id=_name(sample_ids[i], f"sample_id[{i}]", max_len=128, image=True),
                trace_id=_name(trace, f"trace_id[{i}]", max_len=64) if trace else None,
                info=info,
            )
        )
    return out


def submit_images(
    engine: Engine, *, project_id: int, media_dir: str | Path, uploads: Sequence[ImageUpload]
) -> list[SubmittedJob]:
    """Save new images and create their jobs; known samples keep their job and file."""
    known = existing_jobs(
        engine, project_id=project_id, keys=[(u.stream, u.sample_id) for u in uploads]
    )
    saved: dict[int, str] = {}
    specs: list[JobSpec] = []
    try:
        for i, up in enumerate(uploads):
            if (up.stream, up.sample_id) not in known:
                saved[i] = save_image(media_dir, up.data, ext=up.info.ext)
            specs.append(
                JobSpec(
                    stream=up.stream,
                    sample_id=up.sample_id,
                    kind="image",
                    trace_id=up.trace_id,
                    file_name=saved.get(i),
                    content_type=up.info.content_type,
                    size_bytes=len(up.data),
                    width=up.info.width,
                    height=up.info.height,
                )
            )
        todo = [i for i in range(len(uploads)) if i in saved]
        created = submit_jobs(engine, project_id=project_id, specs=[specs[i] for i in todo])
    except BaseException:
        for name in saved.values():
            delete_image(media_dir, name)
        raise
    by_index = dict(zip(todo, created, strict=True))
    for i, job in by_index.items():
        if not job.created:  # another upload of this sample won the race: keep its file
            delete_image(media_dir, saved[i])
    return [by_index.get(i) or known[(u.stream, u.sample_id)] for i, u in enumerate(uploads)]


def parse_text_items(payload: Any, *, max_items: int) -> list[JobSpec]:
    if not isinstance(payload, dict) or not isinstance(payload.get("items"), list):
        raise MediaRejected(422, "items: required, an array of {stream, sample_id, text}")
    items = payload["items"]
    if not items:
        raise MediaRejected(422, "items: must not be empty")
    if len(items) > max_items:
        raise MediaRejected(413, f"items: {len(items)} items exceed the limit of {max_items}")
    specs = []
    for i, item in enumerate(items):
        p = f"items[{i}]"
        if not isinstance(item, dict):
            raise MediaRejected(422, f"{p}: must be an object")
        text = item.get("text")
        if not isinstance(text, str):
            raise MediaRejected(422, f"{p}.text: required, a string")
        problem = unstorable(text)  # NUL or a lone surrogate: no store can hold either
        if problem is not None:
            raise MediaRejected(422, f"{p}.text: {problem}")
        if len(text) > MAX_TEXT_CHARS:
            raise MediaRejected(413, f"{p}.text: longer than {MAX_TEXT_CHARS} characters")
        trace = item.get("trace_id")
        specs.append(
            JobSpec(
                stream=_name(item.get("stream"), f"{p}.stream", max_len=128),
                sample_id=_name(item.get("sample_id"), f"{p}.sample_id", max_len=128),
                kind="text",
                trace_id=None if trace is None else _name(trace, f"{p}.trace_id", max_len=64),
                text=text,
            )
        )
    return specs


def submit_texts(
    engine: Engine, *, project_id: int, items: Sequence[JobSpec]
) -> list[SubmittedJob]:
    return submit_jobs(engine, project_id=project_id, specs=items)


def plausible_key(value: str) -> bool:
    """Could be a stored sample id or stream name (anything else cannot match a job)."""
    return 0 < len(value) <= 128 and not any(ord(c) < 32 for c in value)


def find_image_job(
    session: Session, *, project_id: int, key: str, stream: str | None
) -> MediaJob | None:
    """The newest image job of sample ``key`` (in ``stream`` when given), else job id ``key``."""
    q = select(MediaJob).where(
        MediaJob.project_id == project_id, MediaJob.kind == "image", MediaJob.sample_id == key
    )
    if stream is not None:
        q = q.where(MediaJob.stream == stream)
    job = session.scalars(q.order_by(MediaJob.id.desc()).limit(1)).first()
    if job is None and stream is None and key.isdigit() and len(key) < 19:
        job = session.scalar(
            select(MediaJob).where(
                MediaJob.project_id == project_id, MediaJob.kind == "image", MediaJob.id == int(key)
            )
        )
    return job


def get_job(session: Session, *, project_id: int, job_id: int) -> MediaJob | None:
    return session.scalar(
        select(MediaJob).where(MediaJob.id == job_id, MediaJob.project_id == project_id)
    )
