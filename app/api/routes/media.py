"""Media to embed: ``POST /api/v1/media`` (images or texts), job status, stored images."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse
from starlette.datastructures import UploadFile

from app.api.body import parse_json, read_body
from app.api.deps import EngineDep, IngestKey, Int8Id, ReadKey, SessionDep, SettingsDep
from app.media import intake
from app.media.schemas import ImageJobOut, MediaJobOut, SubmittedJobOut, SubmittedJobs, job_status
from app.media.store import MediaRejected, image_path

router = APIRouter(prefix="/api/v1/media", tags=["media"])


@router.post("")
async def submit_media(
    request: Request, principal: IngestKey, settings: SettingsDep, engine: EngineDep
) -> SubmittedJobs:
    """Multipart images (``file`` parts with ``stream``, ``sample_id`` and optional
    ``trace_id`` per file, in order) or JSON ``{"items": [{"stream", "sample_id",
    "trace_id"?, "text"}]}``. Re-sending a ``(stream, sample_id)`` returns its job."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    try:
        if ctype == "multipart/form-data":
            specs = await _image_specs(request, settings)
            jobs = intake.submit_images(
                engine, project_id=principal.project_id, media_dir=settings.media_dir, uploads=specs
            )
        elif ctype == "application/json":
            payload = parse_json(await read_body(request, limit=settings.max_request_bytes))
            jobs = intake.submit_texts(
                engine,
                project_id=principal.project_id,
                items=intake.parse_text_items(payload, max_items=settings.max_events_per_batch),
            )
        else:
            raise HTTPException(
                415, "Content-Type must be multipart/form-data (images) or application/json (texts)"
            )
    except MediaRejected as exc:
        raise HTTPException(exc.status, str(exc)) from None
    return SubmittedJobs(jobs=[SubmittedJobOut.model_validate(j) for j in jobs])


async def _image_specs(request: Request, settings: Any) -> list[intake.ImageUpload]:
    declared = request.headers.get("content-length")
    limit = settings.media_max_bytes * intake.MAX_FILES + 1024 * 1024
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPException(413, f"request body of {declared} bytes exceeds {limit} bytes")
    try:
        form = await request.form(max_files=intake.MAX_FILES, max_fields=4 * intake.MAX_FILES)
    except Exception as exc:  # the multipart parser's own errors are the client's
        raise HTTPException(400, f"body: malformed multipart form: {exc}") from None
    try:
        files = [f for name in ("file", "files") for f in form.getlist(name)]
        if not files or not all(isinstance(f, UploadFile) for f in files):
            raise HTTPException(422, "file: at least one image file part is required")
        uploads = []
        for upload in files:
            assert isinstance(upload, UploadFile)
            uploads.append(await upload.read(settings.media_max_bytes + 1))
        return intake.image_uploads(
            uploads,
            streams=[str(v) for v in form.getlist("stream")],
            sample_ids=[str(v) for v in form.getlist("sample_id")],
            trace_ids=[str(v) for v in form.getlist("trace_id")],
            max_bytes=settings.media_max_bytes,
            max_pixels=settings.media_max_pixels,
        )
    finally:
        await form.close()


@router.get("/{job_id}")
def get_job(job_id: Int8Id, principal: ReadKey, session: SessionDep) -> ImageJobOut | MediaJobOut:
    job = intake.get_job(session, project_id=principal.project_id, job_id=job_id)
    if job is None:
        raise HTTPException(404, f"job_id: no media job {job_id} in this project")
    return job_status(job)


_IMAGE = {"schema": {"type": "string", "format": "binary"}}


@router.get(
    "/{key}/image",
    response_class=FileResponse,
    responses={200: {"content": {t: _IMAGE for t in ("image/jpeg", "image/png", "image/webp")}}},
)
def get_image(
    key: str,
    principal: ReadKey,
    session: SessionDep,
    settings: SettingsDep,
    stream: str | None = None,
) -> FileResponse:
    """The stored image of a sample (``key`` = sample id, ``stream`` narrows it) or of a job
    (``key`` = job id, when no sample has that id). Read and annotate keys may fetch it."""
    if not intake.plausible_key(key) or (stream is not None and not intake.plausible_key(stream)):
        raise HTTPException(404, "no stored image for this sample or job in this project")
    job = intake.find_image_job(session, project_id=principal.project_id, key=key, stream=stream)
    if job is None or not job.file_name:
        raise HTTPException(404, "no stored image for this sample or job in this project")
    try:
        path = image_path(settings.media_dir, job.file_name)
    except ValueError:
        raise HTTPException(404, "no stored image for this sample or job") from None
    if not path.is_file():
        raise HTTPException(404, "the image is no longer stored (retention)")
    return FileResponse(
        path,
        media_type=job.content_type or "application/octet-stream",
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "private, max-age=3600"},
    )
