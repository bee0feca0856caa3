"""The demo's words and pictures: every trace of a generated workload gets a request and an
answer that follow it, every tool span what its tool returned; every image kind draws."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

from PIL import Image, ImageStat

from app.demo import pictures
from app.demo.transcripts import add_words
from pipelines.scenarios import generate_workload

START = datetime(2026, 11, 1, tzinfo=UTC)


def test_every_trace_and_tool_span_gets_words_that_follow_it() -> None:
    events = generate_workload(5, START, timedelta(hours=2), 60, embedding_dim=8)
    add_words(events)
    traces = [e["body"] for e in events if e["type"] == "trace"]
    tools = [e["body"] for e in events if e["type"] == "span" and e["body"]["kind"] == "tool"]
    assert traces and tools
    by_hash: dict[str, set[str]] = {}
    for t in traces:
        attrs = t["attributes"]
        assert attrs["input"] and attrs["output"]
        by_hash.setdefault(t["input_hash"], set()).add(attrs["input"])
        if t["status"] == "error":
            assert attrs["output"].startswith("Sorry")
    assert all(len(asked) == 1 for asked in by_hash.values())  # one input, one wording
    for s in tools:
        said = s["attributes"]["gen_ai.tool.call.result"]
        assert said.startswith("error:") == (s["status"] == "error"), (said, s["status"])


def test_each_kind_draws_its_own_picture_and_the_new_camera_tints_it() -> None:
    drawn = {pictures.picture(k, 0.0, "demo-img00001") for k in range(len(pictures.SCENES))}
    assert len(drawn) == len(pictures.SCENES)  # nine different pictures
    clean = Image.open(io.BytesIO(pictures.picture(2, 0.0, "s")))
    tinted = Image.open(io.BytesIO(pictures.picture(2, 0.45, "s")))
    assert clean.size == (pictures.W, pictures.H)
    assert _mean(tinted) < _mean(clean) - 40
    assert pictures.caption(8) == "A photo of a damaged, dented parcel"


def _mean(im: Image.Image) -> float:
    return float(ImageStat.Stat(im.convert("L")).mean[0])
