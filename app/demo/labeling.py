"""The demo's labeling queues, and the pictures its image queue shows.

Two queues an annotator can work in: ``support-answers`` holds support-agent conversations
that the active-learning selector found unlike the rest (the request, the tool calls and
the answer, judged resolved or not; labels flow back as ``success`` ground truth), and
``vlm-images`` holds the images of the VLM stream it picked, boosted where FM-6 fired.

The image stream arrives as vectors, as a VLM service with its own encoder sends it. For
the samples the fill queued, the demo stores the picture each vector stands for
(:mod:`app.demo.pictures`) as an embedded media job of that sample, the record an upload
through ``POST /api/v1/media`` leaves once the embed worker is done: the labeling page
then shows it with its caption, through the media API like any uploaded image.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from app.demo import pictures
from app.labeling.queues import create_queue
from app.labeling.schemas import QueueCreate
from app.media.store import save_image
from app.models.base import utcnow
from app.models.labeling import LabelQueue, QueueItem
from app.models.media import MediaJob
from pipelines.scenarios import IMAGE_STREAM
from pipelines.scenarios.vlm import IMAGE_MODEL, image_draws
from pipelines.scenarios.workload import scenario_prefix

IMAGE_QUEUE = "vlm-images"
TRACE_QUEUE = "support-answers"
QUEUE_BODIES: tuple[dict[str, Any], ...] = (
    {
        "name": TRACE_QUEUE,
        "description": (
            "Read the customer's request, the tool calls and the agent's answer. "
            "Resolved: the answer does what was asked, with facts the tools returned. "
            "Not resolved: it answers something else, invents facts a tool did not return, "
            "or gives up. Can't tell: the conversation does not show enough."
        ),
        "selection": {"agents": ["support-agent"], "sources": ["production"]},
        "label_schema": {
            "type": "categorical",
            "values": ["resolved", "not resolved", "can't tell"],
            "correct_values": ["resolved"],
        },
        "label_name": "success",
        "budget_per_period": 30,
        "fill_interval_seconds": 600,
    },
    {
        "name": IMAGE_QUEUE,
        "description": (
            "Is this the kind of image the service was built for (receipts, charts, products, "
            "app screenshots, notes, street signs, documents, pets)? New kind of image: "
            "content it was not built for. Unusable: too dark or damaged to read."
        ),
        "selection": {"streams": [IMAGE_STREAM]},
        "label_schema": {
            "type": "categorical",
            "values": ["as expected", "new kind of image", "unusable"],
            "correct_values": ["as expected"],
        },
        "label_name": "image_ok",
        "budget_per_period": 40,
        "fill_interval_seconds": 600,
    },
)
QUEUES = tuple(b["name"] for b in QUEUE_BODIES)
_INDEX = re.compile(r"-img(\d{5})$")


def ensure_queues(session: Session, *, project_id: int) -> None:
    """Create the demo's queues that this project does not have yet (by name)."""
    have = set(session.scalars(select(LabelQueue.name).where(LabelQueue.project_id == project_id)))
    for body in QUEUE_BODIES:
        if body["name"] not in have:
            create_queue(session, project_id=project_id, body=QueueCreate.model_validate(body))


def illustrate(
    engine: Engine,
    *,
    project_id: int,
    media_dir: str,
    seed: int,
    injections: list[Any],
    start: Any,
    hours: float,
    images_per_hour: float,
    dim: int,
) -> int:
    """Store the picture of every queued ``vlm.image`` sample of this replay that has none;
    return how many. The arguments are the replay's, so the draws are the stream's own."""
    prefix = scenario_prefix(seed, start, injections)
    _, _, kinds, shifts = image_draws(
        seed, start.timestamp(), timedelta(hours=hours).total_seconds(), images_per_hour, dim,
        injections,
    )  # fmt: skip
    with Session(engine) as session:
        have = select(MediaJob.sample_id).where(
            MediaJob.project_id == project_id, MediaJob.stream == IMAGE_STREAM
        )
        rows = session.execute(
            select(QueueItem.sample_id, QueueItem.embedding_id)
            .join(LabelQueue, LabelQueue.id == QueueItem.queue_id)
            .where(
                LabelQueue.project_id == project_id,
                QueueItem.stream == IMAGE_STREAM,
                QueueItem.sample_id.like(f"{prefix}-img%"),
                QueueItem.sample_id.not_in(have),
            )
        ).all()
        now = utcnow()
        for sample_id, embedding_id in rows:
            found = _INDEX.search(sample_id or "")
            if sample_id is None or found is None or int(found.group(1)) >= len(kinds):
                continue
            k = int(found.group(1))
            data = pictures.picture(int(kinds[k]), float(shifts[k]), sample_id)
            session.add(
                MediaJob(
                    project_id=project_id, stream=IMAGE_STREAM, sample_id=sample_id,
                    kind="image", file_name=save_image(media_dir, data, ext=".png"),
                    content_type="image/png", size_bytes=len(data), width=pictures.W,
                    height=pictures.H, text=pictures.caption(int(kinds[k])), status="done",
                    model=IMAGE_MODEL, embedding_id=embedding_id,
                    finished_at=now,
                )
            )  # fmt: skip
        session.commit()
    return len(rows)
