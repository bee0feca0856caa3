"""For each signal a detector reads, the exact ways to send it, by name.

A remedy is one of: an ``attribute`` to set on spans or on the resource
(``OTEL_RESOURCE_ATTRIBUTES``), an ``instrumentation`` setting of the library a team
already runs, a derived-field rule of ``PUT /api/v1/project/derived-fields``, a
``score_roles`` change (``PUT /api/v1/project/score-roles``), or an ``api`` to call. The
instrumentation settings are the libraries' own names (read in their sources): OTel
GenAI's ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (an enum under
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``), OpenInference's
``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS`` (default false),
OpenLLMetry's ``TRACELOOP_TRACE_CONTENT`` (default true) and OpenLIT's
``openlit.init(capture_message_content=True)`` (default true).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.scores.roles import ScoreRoles

Remedy = dict[str, str]


def _r(how: str, text: str) -> Remedy:
    return {"how": how, "text": text}


# Message content on the spans: what the server-side derivations (input identity,
# decision from the output, text embeddings, requested tool calls) read.
CONTENT_CAPTURE: tuple[Remedy, ...] = (
    _r(
        "instrumentation",
        "OTel GenAI (openai-v2): OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only "
        "with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental",
    ),
    _r("instrumentation", "OpenInference: leave OPENINFERENCE_HIDE_INPUTS and "
       "OPENINFERENCE_HIDE_OUTPUTS unset or false"),
    _r("instrumentation", "OpenLLMetry: TRACELOOP_TRACE_CONTENT=true"),
    _r("instrumentation", "OpenLIT: openlit.init(capture_message_content=True)"),
)  # fmt: skip

_DERIVED_FIELDS_API = "PUT /api/v1/project/derived-fields"

REMEDIES: dict[str, tuple[Remedy, ...]] = {
    "steps": (
        _r("api", "send spans: OTLP POST /v1/traces from any GenAI instrumentation, "
           "or native span events on POST /api/v1/ingest"),
    ),
    # Only a span attribute gives a step its confidence: the derived ``confidence`` signal
    # is one per trace (the final answer's), which FM-4 reads and FM-1 cannot.
    "step_confidence": (
        _r("attribute", "telltale.confidence (a number in [0, 1]) on each LLM or agent span; "
           "without it FM-1 still tests compounding, only its coherence-illusion test waits"),
    ),
    "tool_steps": (
        _r("instrumentation", "tool spans (gen_ai.operation.name=execute_tool, OpenInference "
           "TOOL, OpenLLMetry @tool); plain client libraries need content capture so the "
           "requested tool calls are read from the output messages:"),
        *CONTENT_CAPTURE,
    ),
    "input_hash": (
        _r("attribute", "telltale.input_hash on the root span (the same value for the same "
           "user input)"),
        _r("config", f"input_identity: a normalised hash of the first LLM call's user input, "
           f"derived from captured content ({_DERIVED_FIELDS_API})"),
        *CONTENT_CAPTURE,
    ),
    "entry_point": (
        _r("attribute", "telltale.entry_point on the root span, or for a whole service "
           "OTEL_RESOURCE_ATTRIBUTES=telltale.entry_point=<name>"),
    ),
    "decision": (
        _r("attribute", "telltale.decision (the categorical final answer) on the root span"),
        _r("config", f"decision: the tools executed plus the finish reason, or a field of the "
           f"final output by JSON path or regex ({_DERIVED_FIELDS_API})"),
    ),
    "confidence": (
        _r("attribute", "telltale.confidence (a number in [0, 1]) on the agent's final span"),
        _r("config", f"confidence: from token logprobs or a self-reported field "
           f"({_DERIVED_FIELDS_API})"),
    ),
    "true_scores": (
        _r("evaluator", "an online evaluator: an LLM judge scores every trace for the objective "
           '(POST /api/v1/evaluators {"kind": "llm_judge", "objective": "<true score name>", '
           '...} or Settings > Evaluators); the labels you send then correct its estimate'),
        _r("api", 'POST /api/v1/scores {"scores": [{"trace_id": ..., "name": "resolved", '
           '"value": 1, "source": "delayed"}]} with the outcome once it is known'),
        _r("attribute", "telltale.score.<name> with telltale.score.<name>.kind=true and "
           ".source=delayed or human"),
    ),
    "proxy_scores": (
        _r("evaluator", "an online evaluator (an LLM judge or a built-in check) scores each "
           "trace: POST /api/v1/evaluators or Settings > Evaluators"),
        _r("api", "evaluation results (gen_ai.evaluation.result events, OpenInference "
           "annotations / evaluations) or POST /api/v1/scores for thumbs, ratings, CSAT"),
        _r("attribute", "telltale.score.<name> (kind proxy by default)"),
    ),
    "eval_traces": (
        _r("attribute", "OTEL_RESOURCE_ATTRIBUTES=telltale.source=eval for the evaluation "
           "harness's runs (telltale.source on spans works too)"),
        _r("config", f"source: a rule such as deployment.environment=eval -> eval "
           f"({_DERIVED_FIELDS_API})"),
    ),
    "failure_issues": (
        _r("api", "send traces whose failed tool calls and steps have status ERROR, with "
           "error.type and a status description (the message grouped into issues)"),
    ),
    "arrivals": (
        _r("api", "send traces (OTLP POST /v1/traces or POST /api/v1/ingest): silence compares "
           "what arrives with the same hours of earlier days, from 1.5 h after the first"),
    ),
    "counterfactual_runs": (
        _r("attribute", "telltale.counterfactual_of=<baseline trace id> on the candidate run"),
        _r("config", f"counterfactual: pair a baseline and a candidate agent version by their "
           f"shared input identity (shadow traffic) ({_DERIVED_FIELDS_API})"),
    ),
    "input_embedding": (
        _r("config", f"text_embeddings: <agent>.input vectors computed by Telltale from "
           f"captured content ({_DERIVED_FIELDS_API})"),
        *CONTENT_CAPTURE,
        _r("api", "or POST /api/v1/embeddings to stream <agent>.input with trace_ids"),
    ),
    "output_embedding": (
        _r("config", f"text_embeddings: <agent>.output vectors computed by Telltale from "
           f"captured content ({_DERIVED_FIELDS_API})"),
        *CONTENT_CAPTURE,
        _r("api", "or POST /api/v1/embeddings to stream <agent>.output with trace_ids"),
    ),
    "stream_embeddings": (
        _r("config", f"text_embeddings: each trace's input text embedded by Telltale into "
           f"the <agent>.input stream FM-6 watches, from captured content ({_DERIVED_FIELDS_API})"),
        *CONTENT_CAPTURE,
        _r("api", "POST /api/v1/embeddings (vectors of your own encoder), or POST "
           "/api/v1/media to have images and texts embedded by Telltale"),
    ),
}  # fmt: skip


def score_role_remedies(
    need: str, names: Sequence[tuple[str, str, str, int, int]], *, roles: ScoreRoles
) -> list[Remedy]:
    """Remedies naming the scores already in the window that could fill ``need``, with the
    whole body to PUT (it replaces the roles, so the project's other roles are in it).

    ``names`` are ``(name, stored kind, source, scores, traces)`` as counted in the window.

    >>> names = [("helpfulness", "proxy", "online", 40, 40), ("resolved", "proxy", "online", 9, 9)]
    >>> [r["text"] for r in score_role_remedies("true_scores", names, roles=ScoreRoles())][0]
    ... # doctest: +ELLIPSIS
    'scores helpfulness, resolved arrive but none is read as true: ...{"roles": {"resolved": "true"}...'
    """
    want = "true" if need == "true_scores" else "proxy"
    kinds = {n: roles.kind_of(n, k) for n, k, *_ in names}
    if want in kinds.values() and need == "proxy_scores":
        return []
    out: list[Remedy] = []
    candidates = sorted(n for n, k in kinds.items() if k != want)
    if candidates and want not in kinds.values():
        # The likeliest outcome name first: a judge's score is the proxy, an outcome the truth.
        pick = _likeliest(candidates, want)
        body = {"roles": {**roles.as_dict, pick: want}, "label_sources": list(roles.label_sources)}
        out.append(
            _r("score_roles", f"scores {', '.join(candidates)} arrive but none is read as {want}: "
               f"e.g. PUT /api/v1/project/score-roles {json.dumps(body)}")
        )  # fmt: skip
    if need == "true_scores":
        outside = sorted(
            {s for n, k, s, *_ in names if kinds[n] == "true"} - set(roles.label_sources)
        )
        if outside:
            body = {
                "roles": roles.as_dict,
                "label_sources": sorted({*roles.label_sources, *outside}),
            }
            out.append(
                _r("score_roles", f"true scores from source {', '.join(outside)} are not labels: "
                   f"PUT /api/v1/project/score-roles {json.dumps(body)}")
            )  # fmt: skip
    return out


_OUTCOME_WORDS = ("resolved", "correct", "success", "outcome", "accepted", "label", "truth")


def _likeliest(candidates: list[str], want: str) -> str:
    outcome = [n for n in candidates if any(w in n.lower() for w in _OUTCOME_WORDS)]
    if want == "true":
        return (outcome or candidates)[0]
    rest = [n for n in candidates if n not in outcome]
    return (rest or candidates)[0]
