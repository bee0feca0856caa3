"""Settings · evaluators and an evaluator's page without a browser: admin writes and read
keys read, CSRF, a refused value answered 422 beside the field it names with what was typed
kept (never the API key), create, edit (a new version), pause and resume, a test on a trace
that shows the exact messages and stores nothing, and the trace page naming the evaluator
and its reason beside each score it wrote."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

from sqlalchemy import Engine, select

from app.db import write_session
from app.evaluators.runner import run_due
from app.models import Score
from app.models.evaluators import Evaluation, Evaluator
from bench.fake_judge import JudgeServer
from tests.app.evaluators.test_evaluators import chat_trace, ingest, settle
from tests.conftest import auth, sqlite_only
from tests.web.test_pages import login
from tests.web.test_settings_pages import HTML, csrf, post


def judge_form(judge: JudgeServer, **over: str) -> dict[str, str]:
    return {"name": "resolved-judge", "kind": "llm_judge", "score_name": "resolved_judge",
            "objective": "task_success", "base_url": judge.base_url, "model": "judge-1",
            "api_key": "sk-page-secret", "answer": "score",
            "prompt": "Did the agent resolve the request?\n{conversation}", "delay_seconds": "0",
            "sample_rate": "1", "daily_calls": "100", "daily_tokens": "100000",
            "concurrency": "2", "timeout_seconds": "10", "max_retries": "0",
            "max_output_tokens": "256", "max_content_chars": "8000", "enabled": "true",
            **over}  # fmt: skip


def evaluators(engine: Engine) -> list[Evaluator]:
    with write_session(engine) as s:
        return list(s.scalars(select(Evaluator).order_by(Evaluator.id)))


def text(html: str) -> str:
    """What a person reads: the page without tags, spaces folded."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def made_by_api(client, key: str, judge: JudgeServer, **over: Any) -> int:
    body: dict[str, Any] = {
        "name": "resolved-judge", "kind": "llm_judge", "score_name": "resolved_judge",
        "api_key": "sk-api-secret", "delay_seconds": 0, "daily_calls": 100,
        "judge": {"base_url": judge.base_url, "model": "judge-1",
                  "prompt": "Did the agent resolve the request?\n{conversation}"}, **over,
    }  # fmt: skip
    r = client.post("/api/v1/evaluators", json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def traffic(client, key: str, tids: list[str], *, resolved: set[str],
            broken: frozenset[str] = frozenset()) -> None:  # fmt: skip
    """Traces the loopback judge scores 1 (``resolved``), 0, or answers 7 for (``broken``)."""
    at = datetime.now(UTC) + timedelta(seconds=1)
    for i, tid in enumerate(tids):
        answer = "Refunded. RESOLVED" if tid in resolved else "I could not."
        answer = "BROKEN" if tid in broken else answer
        ingest(client, key, chat_trace(tid, at=at + timedelta(seconds=i), question="refund?",
                                       answer=answer))  # fmt: skip


def beside(html: str, input_id: str) -> str:
    """The error shown beside input ``input_id``: the element its ``aria-describedby``
    names, which follows it before the next input's label."""
    field = re.search(rf'id="{input_id}"[^>]*aria-invalid="true" aria-describedby="([\w-]+)"',
                      html)  # fmt: skip
    assert field, f"{input_id} is not marked invalid"
    error = re.search(rf'<span class="field-error" id="{field.group(1)}">(.*?)</span>', html, re.S)
    assert error and field.end() < error.start(), input_id
    assert "<label" not in html[field.end() : error.start()], "the error is not beside its input"
    return text(error.group(1))


@sqlite_only
def test_a_read_key_reads_the_evaluator_page_and_cannot_post_the_forms(
    client, make_key, engine, judge
):
    eid = made_by_api(client, make_key("admin"), judge)
    login(client, make_key("read"))
    home = client.get("/", headers=HTML).text
    token = csrf(home)
    assert client.get("/settings/evaluators", headers=HTML).status_code == 403
    assert client.get(f"/settings/evaluators/{eid}", headers=HTML).status_code == 403
    for path, data in [
        ("/settings/evaluators", judge_form(judge, name="other")),
        (f"/settings/evaluators/{eid}", judge_form(judge, prompt="{output}")),
        (f"/settings/evaluators/{eid}/pause", {"enabled": "false"}),
        (f"/settings/evaluators/{eid}/delete", {}),
        (f"/evaluators/{eid}/try", {"trace_id": "t1"}),
    ]:
        r = post(client, path, data, token)
        assert r.status_code == 403 and "admin role" in r.text, (path, r.status_code)
    page = client.get(f"/evaluators/{eid}", headers=HTML)
    assert page.status_code == 200
    said = text(page.text)
    assert "Evaluator resolved-judge running" in said
    assert "0 of 100 calls, 0 of 10,000,000 tokens" in said
    assert 'id="ev-try"' not in page.text and "edit in Settings" not in said  # admin only
    (ev,) = evaluators(engine)
    assert ev.enabled and ev.version == 1 and judge.requests == []


def test_a_judge_is_refused_beside_the_field_then_created_edited_paused_and_resumed(
    client, make_key, engine, judge
):
    login(client, make_key("admin"))
    page = client.get("/settings/evaluators", headers=HTML)
    assert page.status_code == 200 and "No evaluators yet" in page.text
    token = csrf(page.text)
    r = post(client, "/settings/evaluators", judge_form(judge, base_url="ftp://judge"), token)
    assert r.status_code == 422
    assert "judge.base_url: Value error, must be an http(s) URL" in text(r.text)  # the API's words
    assert beside(r.text, "ev-base-url") == "must be an http(s) URL"  # beside the field
    assert 'id="ev-base-url" name="base_url" value="ftp://judge" maxlength="500"' in r.text
    assert 'value="judge-1"' in r.text  # what was typed stays
    assert "sk-page-secret" not in r.text  # but never the key
    r = post(client, "/settings/evaluators",
             judge_form(judge, answer="label", labels="pass=1, fail=x", prompt="no variables"),
             token)  # fmt: skip
    assert r.status_code == 422
    assert beside(r.text, "ev-labels") == (
        "fail: Input should be a valid number, unable to parse string as a number"
    )
    assert beside(r.text, "ev-prompt").startswith("must use at least one of {input}")
    assert evaluators(engine) == []

    r = post(client, "/settings/evaluators", judge_form(judge), token)
    assert r.status_code == 200, text(r.text)
    assert "Evaluator 'resolved-judge' saved; it scores the traces that settle from now on" in (
        text(r.text))  # fmt: skip
    (ev,) = evaluators(engine)
    assert (ev.api_key, ev.config["base_url"], ev.objective) == (
        "sk-page-secret", judge.base_url, "task_success")  # fmt: skip
    row = re.search(r'<tr data-evaluator="\d+">(.*?)</tr>', r.text, re.S).group(1)
    cells = [text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[:6] == [
        "resolved-judge", "LLM judge judge-1, answering with a score from 0 to 1",
        "resolved_judge (predicts task_success)", "1", "running",
        "0 of 100 calls, 0 of 100,000 tokens",
    ]  # fmt: skip
    assert cells[6] == "none yet"
    r = post(client, "/settings/evaluators", judge_form(judge), token)
    assert r.status_code == 422 and beside(r.text, "ev-name") == (
        "an evaluator named 'resolved-judge' exists")  # fmt: skip

    edit = client.get(f"/settings/evaluators/{ev.id}", headers=HTML).text
    assert "Edit evaluator resolved-judge" in text(edit)
    assert "A key is set; it is never shown. Leave blank to keep it." in text(edit)
    assert "sk-page-secret" not in edit
    same = judge_form(judge, api_key="")
    r = post(client, f"/settings/evaluators/{ev.id}", same, token)
    assert r.status_code == 200 and "Evaluator 'resolved-judge' saved." in text(r.text)
    (ev,) = evaluators(engine)
    assert ev.version == 1 and ev.api_key == "sk-page-secret"  # the same config, the key kept
    r = post(
        client,
        f"/settings/evaluators/{ev.id}",
        {**same, "prompt": "Judge strictly.\n{output}", "sample_rate": "0.5"},
        token,
    )
    assert r.status_code == 200
    assert "saved as version 2: what it computes changed" in text(r.text)
    r = post(client, f"/settings/evaluators/{ev.id}", {**same, "sample_rate": "2"}, token)
    assert r.status_code == 422
    assert beside(r.text, "ev-sample_rate") == "Input should be less than or equal to 1"
    assert "Edit evaluator resolved-judge" in text(r.text)  # still the edit form
    r = post(client, f"/settings/evaluators/{ev.id}", {**same, "remove_api_key": "1"}, token)
    assert r.status_code == 200
    (ev,) = evaluators(engine)
    assert (ev.version, ev.sample_rate, ev.api_key) == (3, 1.0, None)

    r = post(client, f"/settings/evaluators/{ev.id}/pause", {"enabled": "false"}, token)
    assert "Evaluator 'resolved-judge' paused." in text(r.text)
    assert evaluators(engine)[0].enabled is False
    with write_session(engine) as s:  # the circuit breaker paused it as well
        row = s.get(Evaluator, ev.id)
        row.paused_until = datetime.now(UTC) + timedelta(minutes=30)
        row.pause_reason = "5 calls in a row failed (last: HTTP 500); paused until later"
    r = post(client, f"/settings/evaluators/{ev.id}/pause", {"enabled": "true"}, token)
    assert ("Evaluator 'resolved-judge' resumed; the circuit breaker's pause is lifted."
            in text(r.text))  # fmt: skip
    (ev,) = evaluators(engine)
    assert ev.enabled and ev.paused_until is None and ev.pause_reason is None
    bad = post(client, f"/settings/evaluators/{ev.id}/pause", {"enabled": "false"}, "forged")
    assert bad.status_code == 403 and evaluators(engine)[0].enabled


@sqlite_only
def test_a_check_is_refused_beside_its_argument_then_created(client, make_key, engine):
    login(client, make_key("admin"))
    token = csrf(client.get("/settings/evaluators", headers=HTML).text)
    form = {"name": "no-card", "kind": "check", "check": "pattern", "pattern": "(a",
            "present": "false", "field": "output", "delay_seconds": "0", "enabled": "true"}  # fmt: skip
    r = post(client, "/settings/evaluators", form, token)
    assert r.status_code == 422
    assert beside(r.text, "ev-pattern").startswith("not a valid RE2 pattern")
    r = post(client, "/settings/evaluators", {**form, "pattern": r"\b\d{16}\b", "schema": "{"},
             token)  # fmt: skip
    assert r.status_code == 200, text(r.text)
    (ev,) = evaluators(engine)
    assert ev.config["pattern"] == r"\b\d{16}\b" and ev.config["present"] is False
    assert ev.config["schema"] is None  # another check's argument is not saved with this one
    assert "check: a pattern (RE2) is found, or is absent" in text(r.text)
    assert "a check calls no model (no budget spent)" in text(r.text)
    edit = client.get(f"/settings/evaluators/{ev.id}", headers=HTML).text
    assert 'id="ev-judge"' not in edit and 'id="ev-check"' in edit
    r = post(client, f"/settings/evaluators/{ev.id}", {**form, "pattern": r"\b\d{16}\b"}, token)
    assert r.status_code == 200 and evaluators(engine)[0].version == 1


def test_the_evaluator_page_and_the_trace_page_say_what_the_judge_decided_and_why(
    client, make_key, engine, judge, judge_settings
):
    key = make_key("admin")
    eid = made_by_api(client, key, judge, objective="task_success")
    judge.answer_for = lambda prompt: 7.0 if "BROKEN" in prompt else float("RESOLVED" in prompt)
    traffic(client, key, [f"tr00{i}" for i in range(6)], resolved={"tr000", "tr002"},
            broken=frozenset({"tr004", "tr005"}))  # fmt: skip
    run_due(engine, judge_settings, now=settle(engine))
    login(client, key)
    page = client.get(f"/evaluators/{eid}", headers=HTML)
    assert page.status_code == 200
    said = text(page.text)
    assert "6 of 100 calls, 360 of 10,000,000 tokens, 2 failed" in said
    assert "Evaluations of version 1 4 done, 2 error" in said
    assert "Mean resolved_judge per 5 minutes" in said and "6 evaluations" not in said
    assert "4 evaluations scored in the last 7 days" in said
    chart = re.search(r'<svg class="run-chart".*?</svg>', page.text, re.S).group(0)
    assert chart.count("<circle") == 1  # the four scores fell in one bucket: their mean
    assert ": 0.5</title>" in chart
    errors = re.search(r'<section class="card" id="ev-errors">(.*?)</section>', page.text, re.S)
    assert errors and 'href="/traces/tr004"' in errors.group(1)
    assert "answer: `score` 7.0 is not a number from 0 to 1" in text(errors.group(1))
    recent = re.search(r'<table id="evaluations"[^>]*>(.*?)</table>', page.text, re.S).group(1)
    assert recent.count("<tr") == 7  # the head and six rows
    tr000 = re.search(r'<tr class=""><td><a href="/traces/tr000">.*?</tr>', recent, re.S).group(0)
    assert text(tr000).startswith("tr000 1 judged 1 1 60")

    trace = client.get("/traces/tr000", headers=HTML).text
    row = re.search(r'<tr data-score="resolved_judge">(.*?)</tr>', trace, re.S).group(1)
    assert "evaluator resolved-judge v1" in text(row)
    assert f'href="/evaluators/{eid}"' in row
    assert (
        text(re.search(r'<td class="small why"[^>]*>(.*?)</td>', row, re.S).group(1)) == "judged 1"
    )
    failed = client.get("/traces/tr004", headers=HTML).text
    assert ("Evaluator resolved-judge v1 could not score this trace: answer: `score` 7.0 is not "
            "a number from 0 to 1") in text(failed)  # fmt: skip
    with write_session(engine) as s:  # paused by the breaker: its reason on both pages
        ev = s.get(Evaluator, eid)
        ev.paused_until = datetime.now(UTC) + timedelta(minutes=30)
        ev.pause_reason = "5 calls in a row failed (last: HTTP 500: the judge fell over)"
    said = text(client.get(f"/evaluators/{eid}", headers=HTML).text)
    assert "paused by the circuit breaker until" in said
    assert "5 calls in a row failed (last: HTTP 500: the judge fell over)" in said
    listed = text(client.get("/settings/evaluators", headers=HTML).text)
    assert "5 calls in a row failed (last: HTTP 500: the judge fell over)" in listed


@sqlite_only
def test_a_test_on_a_trace_shows_the_exact_messages_and_the_answer_and_stores_nothing(
    client, make_key, engine, judge, judge_settings
):
    key = make_key("admin")
    eid = made_by_api(client, key, judge)
    traffic(client, key, ["t1"], resolved={"t1"})
    settle(engine)
    client.app.state.settings = judge_settings
    login(client, key)
    token = csrf(client.get(f"/evaluators/{eid}", headers=HTML).text)
    r = post(client, f"/evaluators/{eid}/try", {"trace_id": "nope"}, token)
    assert r.status_code == 422
    assert text(re.search(r'<span class="field-error" id="try-err">(.*?)</span>', r.text).group(1)
                ) == "no trace 'nope' in this project"  # fmt: skip
    assert 'value="nope"' in r.text
    r = post(client, f"/evaluators/{eid}/try", {"trace_id": "t1"}, token)
    assert r.status_code == 200, text(r.text)
    assert "Evaluated trace t1 once; nothing was stored." in text(r.text)
    assert re.search(r'<p id="try-answer">(.*?)</p>', r.text, re.S).group(1) == (
        "Score <strong>1</strong> — judged 1")  # fmt: skip
    assert "60 tokens" in text(re.search(r'<p class="small muted" id="try-cost">(.*?)</p>',
                                         r.text, re.S).group(1))  # fmt: skip
    sent = {m: unescape(c) for m, c in re.findall(
        r'<pre class="try-message" data-role="(\w+)">(.*?)</pre>', r.text, re.S)}  # fmt: skip
    asked = judge.requests[-1]["messages"]
    assert sent == {m["role"]: m["content"] for m in asked}  # exactly what the judge was sent
    assert "never instructions" in sent["system"]
    assert '<trace_data name="conversation">' in sent["user"] and "RESOLVED" in sent["user"]
    with write_session(engine) as s:
        # No score; the only evaluation is the one the derive job queued, still pending.
        assert s.scalars(select(Score)).all() == []
        assert [e.status for e in s.scalars(select(Evaluation))] == ["pending"]
    judge.mode = "unauthorized"
    r = post(client, f"/evaluators/{eid}/try", {"trace_id": "t1"}, token)
    assert r.status_code == 200
    assert text(re.search(r'<p class="error" id="try-error">(.*?)</p>', r.text).group(1)
                ).startswith("call: ")  # fmt: skip


def test_a_backfill_shows_its_estimate_first_and_queues_only_when_confirmed(
    client, make_key, engine, judge
):
    key = make_key("admin")
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    for i, tid in enumerate(["b1", "b2", "b3"]):
        ingest(client, key, chat_trace(tid, at=an_hour_ago + timedelta(seconds=i),
                                       question="refund?", answer="I could not."))  # fmt: skip
    settle(engine)  # derived before the evaluator exists: nothing queues them
    eid = made_by_api(client, key, judge)
    login(client, key)
    token = csrf(client.get(f"/evaluators/{eid}", headers=HTML).text)
    r = post(client, f"/evaluators/{eid}/backfill", {"hours": "24", "confirm": "0"}, token)
    assert r.status_code == 200, text(r.text)
    said = text(re.search(r'<p id="backfill-estimate">(.*?)</p>', r.text, re.S).group(1))
    assert re.fullmatch(r"3 traces of the last 24 h not scored by this version: 3 judge calls, "
                        r"at most [\d,]+ tokens, 0\.03 days of the daily call budget\.", said), said  # fmt: skip
    assert 'id="backfill-confirm"' in r.text and "Queue 3 evaluations" in text(r.text)
    with write_session(engine) as s:
        assert s.scalars(select(Evaluation)).all() == []  # the estimate queued nothing
    r = post(client, f"/evaluators/{eid}/backfill", {"hours": "24", "confirm": "1"}, token)
    assert "Queued 3 evaluations of the last 24 h." in text(r.text)
    with write_session(engine) as s:
        queued = s.scalars(select(Evaluation)).all()
        assert sorted(e.trace_id for e in queued) == ["b1", "b2", "b3"]
        assert all(e.backfill and e.status == "pending" for e in queued)
    r = post(client, f"/evaluators/{eid}/backfill", {"hours": "24", "confirm": "0"}, token)
    assert "scored or queued by this version already: nothing to backfill." in text(r.text)
    login(client, make_key("read"))
    page = client.get(f"/evaluators/{eid}", headers=HTML).text
    assert 'id="ev-backfill"' not in page
    r = post(client, f"/evaluators/{eid}/backfill", {"hours": "24", "confirm": "1"}, csrf(page))
    assert r.status_code == 403 and "admin role" in r.text


def test_session_scope_is_set_on_the_form_and_said_on_the_page(client, make_key, engine, judge):
    key = make_key("admin")
    login(client, key)
    token = csrf(client.get("/settings/evaluators", headers=HTML).text)
    r = post(client, "/settings/evaluators",
             judge_form(judge, scope="session", session_idle_seconds="600"), token)  # fmt: skip
    assert r.status_code == 200, text(r.text)
    (ev,) = evaluators(engine)
    assert ev.selection["scope"] == "session" and ev.selection["session_idle_seconds"] == 600
    edit = client.get(f"/settings/evaluators/{ev.id}", headers=HTML).text
    assert re.search(r'<option value="session" selected>', edit)
    assert "each whole session once idle 10 min, its score on the last turn" in text(
        client.get(f"/evaluators/{ev.id}", headers=HTML).text)  # fmt: skip
    r = post(client, "/settings/evaluators",
             judge_form(judge, name="other", scope="session", session_idle_seconds="5"), token)  # fmt: skip
    assert r.status_code == 422
    assert beside(r.text, "ev-session_idle_seconds").startswith("Input should be greater than")
