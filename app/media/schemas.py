"""Answers of the media routes: the jobs a submission made, and one job's status."""

from __future__ import annotations

from app.response_model import ResponseModel, Time


class SubmittedJobOut(ResponseModel):
    id: int
    sample_id: str
    status: str


class SubmittedJobs(ResponseModel):
    jobs: list[SubmittedJobOut]


class MediaJobOut(ResponseModel):
    """A text job, or the part of an image job every kind has."""

    id: int
    kind: str
    stream: str
    sample_id: str
    trace_id: str | None
    status: str
    attempts: int
    error: str | None
    embedding_id: int | None
    model: str | None
    next_attempt_at: Time | None
    created_at: Time
    finished_at: Time | None


class ImageJobOut(MediaJobOut):
    content_type: str | None
    size_bytes: int | None
    width: int | None
    height: int | None
    image_url: str


def job_status(job: object) -> MediaJobOut | ImageJobOut:
    """A job's status: ``next_attempt_at`` only while pending; image fields for images."""
    out = MediaJobOut.model_validate(job)
    if out.status != "pending":
        out.next_attempt_at = None
    if out.kind != "image":
        return out
    return ImageJobOut.model_validate(
        {**out.model_dump(), **_image_fields(job), "image_url": f"/api/v1/media/{out.id}/image"}
    )


def _image_fields(job: object) -> dict[str, object]:
    return {k: getattr(job, k) for k in ("content_type", "size_bytes", "width", "height")}
