"""The words of the demo's traces: what each user asked, what each tool answered, what the
agent replied.

The scenario generator (:mod:`pipelines.scenarios`) simulates the shape of agent traffic,
not its words, so a demo trace in a labeling queue left the annotator nothing to judge.
The demo writes the words onto the events before it sends them: the trace's ``input`` and
``output`` attributes (what the labeling page and the trace page show as the request and
the answer) and each tool span's ``gen_ai.tool.call.result`` (the tool's turn in the
conversation). They follow the trace: the same input hash asks the same question, a failed
tool call says its error, an errored trace apologises, and the answer names the decision.

No LLM span gets messages: an LLM span's user message is what derivation embeds with
MiniLM into ``<agent>.input``, where the demo already sends its own 32-d vectors, and no
tool span gets arguments, which the loop signals would compare. The detectors read the
same signals as before.
"""

from __future__ import annotations

import hashlib
from typing import Any

ASKS: dict[str, tuple[str, ...]] = {
    "refund": (
        "I returned the blue jacket two weeks ago and still have no refund. Order {n}.",
        "Can I get my money back for order {n}? The package arrived damaged.",
    ),
    "shipping": (
        "Where is my order {n}? Tracking has said 'in transit' for six days.",
        "Can you change the delivery address of order {n} before it ships?",
    ),
    "account": (
        "I can't log in since I changed my email. Account {n}.",
        "Please delete the old card on account {n}.",
    ),
    "technical": (
        "The app crashes when I open my order history (account {n}).",
        "Your checkout page shows an error 502 when I pay with PayPal.",
    ),
    "literature": (
        "Find the three most cited papers on retrieval-augmented generation since 2023.",
        "What does recent work say about sleep and memory consolidation in adults?",
    ),
    "summarise": (
        "Summarise the attached report on battery recycling in five bullet points.",
        "Give me a one-paragraph summary of the EU AI Act's obligations for providers.",
    ),
    "compare": (
        "Compare PostgreSQL and SQLite for a small analytics service.",
        "How do the 2024 and 2025 IPCC figures for sea-level rise differ?",
    ),
    "invoice": (
        "Invoice {n} charges me twice for the same month. Please fix it.",
        "Send me a copy of invoice {n} with our VAT number on it.",
    ),
    "dispute": (
        "I don't recognise the charge of 49.90 on invoice {n}.",
        "We were billed for 12 seats but only use 8 (invoice {n}).",
    ),
    "plan_change": (
        "Move account {n} from the Team plan to Business from next month.",
        "Downgrade us to the free plan; we no longer need the API add-on (account {n}).",
    ),
}

ANSWERS: dict[str, str] = {
    "resolve": "I've sorted this out: {fix} You'll get a confirmation email shortly.",
    "refund": "I've issued a refund of the full amount; it reaches your card in 3-5 days.",
    "escalate": "I've passed this to a specialist, who will reply within one business day.",
    "ask_clarification": "Could you tell me the order or account number this is about?",
    "close": "Thanks for letting us know; I've closed this request.",
    "answer": "Here is what I found: {fix}",
    "answer_with_caveats": "Here is what I found, with a caveat -- the sources disagree: {fix}",
    "insufficient_evidence": "I could not find enough reliable sources to answer this.",
    "refuse": "I can't help with that request.",
    "approve": "Approved: {fix}",
    "deny": "I'm sorry, this request does not qualify under your plan's terms.",
    "partial_credit": "I've applied a partial credit of 50% to your next invoice.",
}

FIXES = (
    "the change is saved on your account.",
    "the three sources agree on the main point, summarised below.",
    "the corrected document is attached.",
)

TOOL_ERRORS = {
    "timeout": "error: the call timed out after 30 s",
    "http_500": "error: HTTP 500 Internal Server Error",
    "rate_limited": "error: 429 Too Many Requests (rate limited)",
    "upstream_error": "error: upstream service unavailable",
    "invalid_arguments": "error: invalid arguments",
}


def _pick(key: str, n: int) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "big") % n


def request_text(task_type: str, input_hash: str) -> str:
    """What the user asked: one fixed wording per input (the same hash asks the same)."""
    asks = ASKS.get(task_type) or ("Please help me with my request.",)
    n = 10000 + _pick(input_hash + "n", 90000)
    return asks[_pick(input_hash, len(asks))].format(n=n)


def answer_text(decision: str, status: str, key: str) -> str:
    """What the agent replied, from its decision; an errored trace apologises instead."""
    if status == "error":
        return "Sorry, something went wrong on our side and I could not finish your request."
    answer = ANSWERS.get(decision, "Done.")
    return answer.format(fix=FIXES[_pick(key, len(FIXES))])


def tool_result_text(tool: str, body: dict[str, Any]) -> str:
    """What a tool call returned, from the result the simulation drew for it."""
    if body.get("status") == "error":
        return TOOL_ERRORS.get(str(body.get("error_type")), "error: the call failed")
    attrs = body.get("attributes") or {}
    count = int(attrs.get("result_count") or 0)
    if count == 0:
        return f"{tool}: no results"
    text = f"{tool}: {count} result{'s' if count != 1 else ''}"
    if attrs.get("partial"):
        text += " (partial: some fields are missing)"
    if attrs.get("stale"):
        text += " (stale: last updated 9 days ago)"
    return text


def add_words(events: list[dict[str, Any]]) -> None:
    """Give each trace and tool span of a generated workload its words, in place."""
    for e in events:
        body = e.get("body")
        if not isinstance(body, dict):
            continue
        if e.get("type") == "trace":
            attrs = body.setdefault("attributes", {})
            tid = str(body.get("trace_id"))
            attrs["input"] = request_text(
                str(attrs.get("task_type")), str(body.get("input_hash") or tid)
            )
            attrs["output"] = answer_text(str(attrs.get("decision")), str(body.get("status")), tid)
        elif e.get("type") == "span" and body.get("kind") == "tool":
            tool = str(body.get("tool_name") or "tool")
            body.setdefault("attributes", {})["gen_ai.tool.call.result"] = tool_result_text(
                tool, body
            )
