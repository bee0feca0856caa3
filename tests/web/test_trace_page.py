"""The trace page without a browser: the conversation as a chat from each convention's
attributes and from GenAI log events, requested tool calls as the detectors' steps, the
span waterfall with model, tokens and cost, errors, scores read with the project's roles,
long content folded."""

from __future__ import annotations

import html as htmllib
import re

import pytest

from tests.app.derive.otlp_agent import agent_run, send
from tests.conftest import auth
from tests.web.test_pages import login


def chat(page: str) -> list[tuple[str, str]]:
    """(role, text) of each chat message, tags stripped."""
    out = []
    for role, body in re.findall(
        r'<li class="msg role-(\w+)[^"]*" data-role="\w+">(.*?)</li>', page, re.S
    ):
        text = re.sub(r"<[^>]+>", " ", body)
        out.append((role, " ".join(htmllib.unescape(text).split())))
    return out


@pytest.mark.parametrize("capture", ["span_only", "event_only"])
def test_an_otel_genai_trace_reads_as_a_chat_with_its_tool_calls(client, make_key, capture):
    key = make_key("admin")
    run = agent_run("Where is my order 42?", tools=("lookup_order",), answer="It ships today.",
                    capture=capture)  # fmt: skip
    send(client, key, [run])
    login(client, make_key("read"))
    page = client.get(f"/traces/{run.trace_id}").text
    said = chat(page)
    roles = [r for r, _ in said]
    assert roles == ["system", "user", "assistant", "tool", "assistant"], said
    assert said[0][1].endswith("You are a support agent.")
    assert "Where is my order 42?" in said[1][1]
    assert "requested tool lookup_order" in said[2][1] and "{}" in said[2][1]
    assert said[3][1].endswith("ok") and "It ships today." in said[4][1]
    # The requested call is a tool step of the detectors, right after the call that asked.
    steps = re.search(r'<section class="card" id="detector-steps">(.*?)</section>', page, re.S)
    assert steps is not None, "no detector steps"
    rows = re.findall(
        r"<tr class=\"[^\"]*\"><td>(\d+)</td><td>(\w+)</td><td>([^<]*)</td>", steps.group(1)
    )
    assert [(k, n) for _, k, n in rows] == [
        ("llm", "chat gpt-4o-mini"), ("tool", "lookup_order"), ("llm", "chat gpt-4o-mini"),
    ], rows  # fmt: skip
    assert "requested by the LLM step before" in steps.group(1)
    # Waterfall: every span, the model of each LLM call and its duration.
    assert page.count('class="step wf') == 3 and page.count("gpt-4o-mini</span>") >= 2
    assert "50 ms" in page


@pytest.mark.parametrize(
    "attributes",
    [
        {  # OpenInference
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be brief.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "What is 2+2?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "4",
        },
        {  # OpenLLMetry
            "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "What is 2+2?",
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "4",
        },
    ],
    ids=["openinference", "openllmetry"],
)  # fmt: skip
def test_flat_conventions_read_as_the_same_chat(client, make_key, attributes):
    key = make_key("admin")
    events = [
        {"id": "t", "type": "trace", "body": {"trace_id": "flat-1", "agent": "calc"}},
        {"id": "s", "type": "span", "body": {
            "trace_id": "flat-1", "span_id": "s1", "kind": "llm", "name": "llm call",
            "request_model": "m-small", "input_tokens": 12, "output_tokens": 1, "cost": 0.0002,
            "attributes": attributes}},
    ]  # fmt: skip
    assert (
        client.post("/api/v1/ingest", json={"events": events}, headers=auth(key)).status_code == 200
    )
    login(client, key)
    page = client.get("/traces/flat-1").text
    assert chat(page) == [("system", "system Be brief."), ("user", "user What is 2+2?"),
                          ("assistant", "assistant m-small 4")]  # fmt: skip
    assert "12 → 1 tokens" in page and "$0.0002" in page


def test_errors_roles_and_long_content(client, make_key):
    key = make_key("admin")
    long_answer = "word " * 600
    events = [
        {"id": "t", "type": "trace", "body": {"trace_id": "long-1", "agent": "a", "status": "error"}},
        {"id": "s1", "type": "span", "body": {"trace_id": "long-1", "span_id": "s1", "kind": "llm",
            "name": "chat", "step_index": 0, "attributes": {"gen_ai.prompt": "hi", "gen_ai.completion": long_answer}}},
        {"id": "s2", "type": "span", "body": {"trace_id": "long-1", "span_id": "s2", "kind": "tool",
            "name": "http_fetch", "tool_name": "http_fetch", "status": "error", "error_type": "TimeoutError",
            "step_index": 1}},
        {"id": "sc", "type": "score", "body": {"trace_id": "long-1", "name": "resolved", "value": 0,
            "kind": "proxy", "source": "delayed"}},
    ]  # fmt: skip
    assert (
        client.post("/api/v1/ingest", json={"events": events}, headers=auth(key)).status_code == 200
    )
    r = client.put("/api/v1/project/score-roles", headers=auth(key),
                   json={"roles": {"resolved": "true"}, "label_sources": ["delayed", "human"]})  # fmt: skip
    assert r.status_code == 200, r.text
    login(client, key)
    page = client.get("/traces/long-1").text
    role = re.search(r'<tr data-score="resolved">.*?<td class="role-cell"[^>]*>(.*?)</td>', page, re.S)
    assert role is not None and role.group(1).startswith("true"), page
    assert "sent as proxy" in role.group(1)
    assert "Show the rest (2400 more characters)" in page  # the answer folds
    assert '<li class="msg role-tool error" data-role="tool">' in page and "TimeoutError" in page
    assert '<li class="step wf kind-tool error">' in page


def test_trace_page_roles_and_bad_ids(client, make_key):
    key = make_key("admin")
    events = [{"id": "t", "type": "trace", "body": {"trace_id": "r-1", "agent": "a"}}]
    client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    login(client, make_key("annotate"))
    assert client.get("/traces/r-1").status_code == 200
    assert client.get("/traces/nope", headers={"accept": "text/html"}).status_code == 404
    assert client.get("/traces/" + "x" * 300, headers={"accept": "text/html"}).status_code == 404
    client.cookies.clear()
    login(client, make_key("read", project="other"))
    assert client.get("/traces/r-1").status_code == 404


def test_the_conversation_alone_for_the_labeling_page(client, make_key):
    key = make_key("admin")
    run = agent_run("Where is my order 42?", answer="It ships today.")
    send(client, key, [run])
    login(client, make_key("annotate"))
    fragment = client.get(f"/traces/{run.trace_id}/conversation").text
    assert not fragment.lstrip().startswith("<!doctype") and '<ol class="chat">' in fragment
    assert [r for r, _ in chat(fragment)] == ["system", "user", "assistant"]
    assert (
        client.get("/traces/nope/conversation", headers={"accept": "text/html"}).status_code == 404
    )


def test_a_1500_deep_parent_chain_renders_indented_to_the_cap(client, make_key):
    key = make_key("admin")
    # Over Python's recursion limit, and listed deepest first (step order): a recursive
    # walk from each span up to the root answered 500.
    deep = 1500
    events = [{"id": "t", "type": "trace", "body": {"trace_id": "deep-1", "agent": "a"}}] + [
        {"id": f"s{i}", "type": "span", "body": {
            "trace_id": "deep-1", "span_id": f"s{i}", "parent_span_id": f"s{i - 1}" if i else None,
            "kind": "tool" if i % 2 else "llm", "name": f"step {i}", "step_index": deep - i}}
        for i in range(deep)
    ]  # fmt: skip
    r = client.post("/api/v1/ingest", json={"events": events}, headers=auth(key))
    assert r.status_code == 200 and r.json()["accepted"] == deep + 1, r.text
    login(client, key)
    page = client.get("/traces/deep-1")
    assert page.status_code == 200
    depths = [int(d) for d in re.findall(r'class="wf-name wf-depth-(\d+)"', page.text)]
    assert len(depths) == deep and depths[-3:] == [2, 1, 0] and max(depths) == 12
