"""The annotator's first hour on the demo, in Chromium at 1280 px and 390 px: the labeling
index says what each queue holds and what is left; the demo's trace queue shows a
conversation to judge (the request, the tool calls, the answer) and why it was picked in
an annotator's words; the image queue shows a picture with its caption; the annotator
claims, labels, undoes and labels again, and exports the labels as JSONL.

The world is the demo's own: :func:`app.demo.setup.prepare` (its queues), a short
:class:`app.demo.replay.Replay` through the ingest API (its words and images), its FM-6
monitor run on the simulated clock, the fills, and :func:`app.demo.labeling.illustrate`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from app.alerts.outbound import OutboundPolicy
from app.db import make_engine
from app.demo.labeling import IMAGE_QUEUE, QUEUES, TRACE_QUEUE, illustrate
from app.demo.replay import Replay, Schedule, Workload
from app.demo.setup import prepare
from app.main import create_app
from app.models.base import utcnow
from app.settings import Settings
from tests.conftest import LiveServer, auth
from tests.web.test_browser import browser, login  # noqa: F401 (fixture)

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/shots-annot")
SEED, HOURS = 3, 10.0


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("demo")
    url = f"sqlite:///{tmp / 'demo.db'}"
    from app import migrate

    migrate.upgrade(url)
    engine = make_engine(url)
    project = prepare(
        engine, receiver_url="http://127.0.0.1:9/hook", secret="s" * 24,
        outbound=OutboundPolicy.from_allow(["127.0.0.1/32"]),
    )  # fmt: skip
    media = str(tmp / "media")
    settings = Settings(database_url=url, scheduler_enabled=False, media_dir=media)
    start = (utcnow() - timedelta(hours=HOURS + 1)).replace(minute=0, second=0, microsecond=0)
    schedule = Schedule(start=start, hours=HOURS, modes=("FM-6",))
    workload = Workload(traces_per_hour=60)
    fm6 = [(m, mode) for m, mode in project.monitors if mode == "FM-6"]
    with (
        LiveServer(create_app(settings, start_background=False)) as server,
        httpx.Client(base_url=server.url, timeout=120) as c,
    ):
        Replay(
            c, schedule=schedule, seed=SEED, workload=workload,
            ingest_key=project.keys["ingest"], admin_key=project.keys["admin"],
            monitors=fm6, speed=1e9, tick=timedelta(hours=1), stop=threading.Event(),
            say=lambda _line: None,
        ).run()  # fmt: skip
        for q in QUEUES:
            r = c.post(f"/api/v1/queues/{q}/fill", headers=auth(project.keys["admin"]))
            assert r.status_code == 200 and r.json()["added"] > 0, r.text
        drawn = illustrate(
            engine, project_id=project.project_id, media_dir=media, seed=SEED,
            injections=schedule.injections(), start=schedule.start, hours=HOURS,
            images_per_hour=workload.images_per_hour, dim=workload.embedding_dim,
        )  # fmt: skip
        assert drawn > 0
        engine.dispose()
        yield {"url": server.url, **project.keys}


def _fits(page, width: int) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        "w => { const out = []; const it = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);"
        " while (it.nextNode()) { const r = document.createRange(); r.selectNodeContents(it.currentNode);"
        " const b = r.getBoundingClientRect(); if (b.right > w) out.push(it.currentNode.parentElement.tagName + '.' +"
        " it.currentNode.parentElement.className + ': ' + it.currentNode.textContent.slice(0, 60)); } return out.slice(0, 5); }",
        width,
    )
    assert scroll <= width, wide
    assert scroll <= width, f"{page.url}: {scroll} px wide in a {width} px viewport"


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_annotator_claims_labels_undoes_and_exports_on_the_demo(demo, browser, width, height):  # noqa: F811
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        viewport={"width": width, "height": height}, accept_downloads=True
    )
    page = context.new_page()
    login(page, demo["url"], demo["annotate"], "/label")
    card = page.locator(f".queue-card[data-queue='{TRACE_QUEUE}']")
    expect(card.locator(".queue-counts")).to_contain_text("items")
    items = int(card.locator(".n-items").inner_text())
    assert items == 30 and int(card.locator(".n-left").inner_text()) <= items
    assert page.locator(f".queue-card[data-queue='{IMAGE_QUEUE}']").count() == 1
    _fits(page, width)
    page.screenshot(path=str(SHOTS / f"index-{width}.png"), full_page=True)

    card.get_by_role("link", name="Start labeling").click()
    item = page.locator("#item")
    expect(item.locator(".reason")).to_contain_text("Unlike anything labeled so far")
    expect(item.locator(".reason")).to_contain_text("requests to support-agent")
    assert "novelty" not in item.locator(".reason").inner_text()
    expect(item.locator("pre.content").first).not_to_be_empty()
    expect(item.locator(".conversation .msg").first).to_be_visible()  # the tool calls' turns
    expect(item.locator("pre.answer")).not_to_be_empty()
    _fits(page, width)
    page.screenshot(path=str(SHOTS / f"trace-item-{width}.png"), full_page=True)

    first = item.get_attribute("data-item-id")
    # The queue's count as this page shows it: under xdist the other width's run may or
    # may not have labeled on this module's demo first.
    before = int(page.locator("#labeled-count").inner_text())
    page.keyboard.press("1")  # resolved
    expect(page.locator("#labeled-count")).to_have_text(str(before + 1))
    expect(item).not_to_have_attribute("data-item-id", first or "")
    page.keyboard.press("u")
    expect(page.locator("#status")).to_contain_text("label undone")
    expect(item).to_have_attribute("data-item-id", first or "")
    page.keyboard.press("2")  # not resolved, this time
    expect(page.locator("#status")).to_contain_text(f"Item {first} labeled")

    with page.expect_download() as got:
        page.locator("#export").click()
    lines = [json.loads(x) for x in Path(got.value.path()).read_text().splitlines() if x]
    mine = [x for x in lines if str(x.get("item_id")) == first]
    assert len(mine) == 1 and mine[0]["label"] == "not resolved", lines

    page.goto(demo["url"] + f"/label/{IMAGE_QUEUE}")
    expect(item.locator("figure img")).to_be_visible()
    assert item.locator("figure img").evaluate("i => i.naturalWidth") == 320
    expect(item.locator("figcaption")).to_contain_text("A ")
    _fits(page, width)
    page.screenshot(path=str(SHOTS / f"image-item-{width}.png"), full_page=True)
    context.close()


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (390, 844)])
def test_admin_reads_the_demo_queues_in_settings(demo, browser, width, height):  # noqa: F811
    page = browser.new_page(viewport={"width": width, "height": height})
    login(page, demo["url"], demo["admin"], "/settings/queues")
    rows = page.locator("#queues tbody tr")
    expect(rows).to_have_count(len(QUEUES))
    expect(page.locator(f"tr[data-queue='{TRACE_QUEUE}']")).to_contain_text(
        "traces of support-agent"
    )
    page.locator(f"tr[data-queue='{IMAGE_QUEUE}']").get_by_role("link", name="Edit").click()
    expect(page.locator("#q-streams")).to_have_value("vlm.image")
    expect(page.locator("#q-values")).to_have_value("as expected, new kind of image, unusable")
    _fits(page, width)
    page.screenshot(path=str(SHOTS / f"settings-queues-{width}.png"), full_page=True)
    page.close()
