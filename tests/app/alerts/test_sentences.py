"""Each failure mode's alert reads as one sentence: what changed, before -> after, where,
since when, on how many. Evidence shapes are the detectors' own, trimmed from a demo run."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from app.alerts import channels, sentences, slack
from app.web import evidence_view

BASELINE = {"baseline": {"degradation_started_at": "2026-12-03T20:30:00Z"}}
FIRED = {"p_value": 1e-5, "effect_ok": True, "fired": True}
QUIET = {"p_value": 0.7, "effect_ok": False, "fired": False}

EVIDENCE = {
    "FM-1": {
        "compounding_ratio": 12.75, "reference_ratio": 0.51, "steps_after_error": 41,
        "compounding_begins_at_depth": 3, "tool_compounding_ratio": 2.4,
        "tool_reference_ratio": 1.1, "tool_steps_after_error": 88,
        "sub_tests": {"compounding": FIRED, "tool_compounding": FIRED, "coherence_illusion": QUIET},
    },
    "FM-2": {
        "cascade_lift": 10.12, "reference_lift": 2.47,
        "cascade_tools": [{"tool": "db_query", "failures": 6, "cascades": 5}],
        "available_but_wrong": [
            {"tool": "search", "rate": 0.19, "reference_rate": 0.027, "calls": 77,
             "p_value": 1.6e-5, "effect_ok": True},
            {"tool": "http_fetch", "rate": 0.221, "reference_rate": 0.0, "calls": 95,
             "p_value": 2.5e-11, "effect_ok": True},
        ],
        "sub_tests": {"cascade_lift": FIRED, "available_but_wrong": FIRED, "latency_quality": QUIET},
    },
    "FM-3": {
        "groups": 21, "decision_disagreement": 0.5875, "reference_decision_disagreement": 0.089,
        "most_inconsistent_inputs": [{"agent": "billing-agent", "agent_version": "0.9.2",
            "decisions": {"approve": 1, "escalate": 1}, "trace_ids": ["t1", "t2"]}],
    },
    "FM-4": {
        "label_coverage": 0.0, "reference_accuracy": 0.673, "estimated_accuracy": 0.434,
        "estimated_accuracy_interval": [0.244, 0.61], "n_current_unlabeled_estimated": 146,
        "n_current_labeled": 31, "estimator": "trace_features",
        "coverage_at_age": {"age_s": 10800.0, "reference": 0.6, "current": 0.02},
        "sub_tests": {"estimated_accuracy": FIRED, "label_coverage_fall": FIRED},
    },
    "FM-5": {
        "gaps": [{"agent": "research-agent", "agent_version": "2.1.0", **QUIET}],
        "trends": [],
        "coverage": [{"agent": "research-agent", "outside_fraction": 0.645,
                      "reference_outside_fraction": 0.059, **FIRED}],
    },
    "FM-6": {
        "method": "mmd", "most_drifted_stream": "support-agent.input",
        "streams": {
            "support-agent.input": {"fired": True, "n_current": 120, "n_reference": 253},
            "billing-agent.input": {"fired": False, "n_current": 68, "n_reference": 144},
        },
        "centroid_shift": {"support-agent.input": {"mu0": 0.385, "mean_current": 0.342}},
        "silent": True,
    },
    "FM-7": {
        "subtests": {"trend": FIRED, "diversity": {**FIRED, "entropy_reference": 0.97,
                     "entropy_current": 0.86, "top_decision_current": {"decision": "resolve", "share": 0.27}}},
        "proxy_rose": [{"name": "engagement", "reference_mean": 0.442, "current_mean": 0.737}],
        "true_fell": [{"name": "factuality", "reference_mean": 0.763, "current_mean": 0.53}],
    },
    "OUTCOME": {
        "objectives": [
            {"signal": "objective", "name": "factuality", "before": 0.84, "after": 0.584,
             "n_reference": 151, "n_current": 301, "p_adjusted": 3.9e-41, "fired": True},
            {"signal": "objective", "name": "toxicity", "before": 0.035, "after": 0.036,
             "n_reference": 151, "n_current": 301, "p_adjusted": 1.0, "fired": False},
        ],
        "operations": [
            {"signal": "trace_error_rate", "name": "trace_error_rate", "before": 0.013,
             "after": 0.173, "n_reference": 151, "n_current": 301, "p_adjusted": 1.7e-7,
             "fired": True},
            {"signal": "loop_rate", "name": "loop_rate", "before": 0.02, "after": 0.14,
             "n_reference": 1280, "n_current": 640, "p_adjusted": 2e-6, "fired": True},
        ],
        "example_trace_ids": ["o1", "o2"],
    },
}  # fmt: skip

EXPECTED = {
    "FM-1": "After a failed step, later steps of the same trace fail 13× as often as independent "
    "errors predict (reference 0.51×), from step depth 3, over 41 steps that followed an error; "
    "after a failed step, later tool calls of the same trace fail 2.4× as often as independent "
    "errors predict (reference 1.1×), over 88 tool calls that followed an error.",
    "FM-2": "Tool http_fetch returns wrong results with a success status in 22% of 95 calls "
    "(0% before); also search 3% → 19%; after a failed tool call, what follows up to the next "
    "tool call fails 10.1× as often as after a good one (2.47× before); cascades start most at "
    "db_query (5 of 6 failures).",
    "FM-3": "The same input now gets a different decision 59% of the time (9% before), over 21 "
    "repeated inputs; e.g. billing-agent 0.9.2 decided approve / escalate for one input.",
    "FM-4": "Estimated accuracy fell 0.67 → 0.43 (interval 0.24–0.61), 146 unlabeled traces "
    "estimated from trace features beside 31 labels; label coverage 0%; labels stopped "
    "arriving: 2% of traces labeled within 3 h, 60% before.",
    "FM-5": "research-agent: 64% of production inputs lie outside what the eval set covers "
    "(6% before).",
    "FM-6": "Stream support-agent.input moved: similarity to the reference centre 0.39 → 0.34 on "
    "120 vectors (253 reference); silent: the error-rate monitors are quiet.",
    "FM-7": "Proxies rose (engagement 0.44 → 0.74) while true objectives fell (factuality 0.76 → "
    "0.53); decisions are less varied (entropy 0.97 → 0.86, resolve now 27%).",
    "OUTCOME": "factuality fell 0.84 → 0.584 on 301 labels (151 reference); failed traces 1% → "
    "17% (301 traces); traces with a tool loop 2% → 14% (640 traces).",
}


@pytest.mark.parametrize("mode", sorted(EVIDENCE))
def test_every_mode_says_what_changed_since_when_on_how_many(mode: str) -> None:
    text = sentences.sentence(
        failure_mode=mode, evidence={**EVIDENCE[mode], **BASELINE}, n_current=272
    )
    unit = "vectors" if mode == "FM-6" else "traces"
    assert text == f"{EXPECTED[mode]} Since 2026-12-03 20:30 UTC, on 272 {unit}."


def test_odd_evidence_falls_back_to_words_then_numbers_never_raises() -> None:
    odd = {"available_but_wrong": "not a list", "cascade_lift": "x", "summary": "lift rose"}
    assert sentences.sentence(failure_mode="FM-2", evidence=odd) == "lift rose."
    assert sentences.sentence(failure_mode="FM-6", evidence=None, statistic=0.02,
                              threshold=0.015) == "Drift statistic 0.02 over threshold 0.015."  # fmt: skip
    assert sentences.sentence(failure_mode="FM-9", evidence={"summary": "x moved"}) == "x moved."


def test_examples_and_tables_come_from_the_evidence() -> None:
    assert evidence_view.examples(EVIDENCE["FM-3"]) == ["t1", "t2"]
    assert evidence_view.examples(EVIDENCE["OUTCOME"]) == ["o1", "o2"]
    [(title, shared, columns, rows)] = [
        t for t in evidence_view.tables(EVIDENCE["OUTCOME"]) if t[0] == "objectives"
    ]
    assert shared == "signal: objective; reference count: 151; current count: 301"
    assert columns[:3] == ["name", "before", "after"] and rows[0][:2] == ["factuality", "0.84"]


def _ctx() -> channels.AlertContext:
    alert = SimpleNamespace(
        id=7, fingerprint="f" * 64, state="firing", severity="critical", failure_mode="FM-2",
        labels={}, evidence={}, count=3, first_fired_at=datetime(2026, 12, 3, 22, tzinfo=UTC),
        last_fired_at=datetime(2026, 12, 3, 23, tzinfo=UTC), acknowledged_at=None,
        resolved_at=None, summary=sentences.sentence(
            failure_mode="FM-2", evidence={**EVIDENCE["FM-2"], **BASELINE}, n_current=272),
    )  # fmt: skip
    return channels.AlertContext(
        alert=alert,  # type: ignore[arg-type]
        monitor_name="FM-2 tool failure cascades",
        project_name="shop",
        public_url="https://telltale.example/",
    )


def test_every_channel_carries_the_sentence_and_the_link_without_repeating_the_mode() -> None:
    ctx = _ctx()
    link = "https://telltale.example/alerts/7"
    said = ctx.alert.summary
    assert said.startswith("Tool http_fetch returns wrong results")
    hook = channels.webhook_payload(ctx, "trigger")
    assert hook["alert"]["summary"] == said and hook["link"] == link
    assert hook["alert"]["title"] == "FM-2 tool failure cascades"
    message = slack.message(ctx, "trigger")
    assert message["text"].startswith(f"Firing: [CRITICAL] FM-2 tool failure cascades: {said}")
    assert link in message["text"] and "FM-2 FM-2" not in str(message)
    pd = channels.pagerduty_payload(ctx, "trigger", "rk")
    assert pd["payload"]["summary"] == f"[CRITICAL] FM-2 tool failure cascades: {said}"
    assert pd["payload"]["custom_details"]["link"] == link and pd["links"][0]["href"] == link
    [am] = channels.alertmanager_payload(ctx, "trigger")
    assert said in am["annotations"]["summary"] and am["annotations"]["link"] == link
    assert am["generatorURL"] == link
    channel = SimpleNamespace(type="slack", config={})
    item = channels.item(channel, ctx, "trigger")  # type: ignore[arg-type]
    assert item["text"] == f"Firing: [CRITICAL] FM-2 tool failure cascades: {said}"


def test_fm4_says_when_the_recent_half_of_the_window_shows_the_fall() -> None:
    evidence = {
        **EVIDENCE["FM-4"], **BASELINE, "estimate_scope": "recent half",
        "sub_tests": {"estimated_accuracy": QUIET, "estimated_accuracy_recent": FIRED},
    }  # fmt: skip
    text = sentences.sentence(failure_mode="FM-4", evidence=evidence, n_current=272)
    assert text.startswith("Estimated accuracy fell 0.67 → 0.43 in the window's recent half")


def test_an_alert_the_chart_opened_says_what_moved_in_its_modes_words() -> None:
    """No single run was significant (no sub-test fired): the sentence still words the
    most significant sub-test, never "Compounding ratio 5.2 over threshold 1.5"."""
    quiet_fm1 = {
        **EVIDENCE["FM-1"],
        "sub_tests": {
            "compounding": {"p_value": 0.004, "effect_ok": True, "fired": False},
            "tool_compounding": {"p_value": 0.3, "effect_ok": False, "fired": False},
        },
        "opened_by": "sequential chart",
        **BASELINE,
    }
    said = sentences.sentence(
        failure_mode="FM-1", evidence=quiet_fm1, statistic=5.2, threshold=1.5, p_value=0.0053
    )
    assert said.startswith("Sustained over several runs: after a failed step, later steps")
    assert "over threshold" not in said and "tool calls" not in said


@pytest.mark.parametrize(
    ("onset", "words"),
    [
        ("change point", "Since 2026-12-03 20:30 UTC"),
        ("first fired run", "First seen 2026-12-03 20:30 UTC"),
    ],
)
def test_since_says_how_the_start_was_found(onset: str, words: str) -> None:
    ev = {**EVIDENCE["FM-2"], "baseline": {**BASELINE["baseline"], "onset": onset}}
    assert words in sentences.sentence(failure_mode="FM-2", evidence=ev, n_current=10)


def test_a_change_point_with_seconds_reads_to_the_minute() -> None:
    ev = {**EVIDENCE["FM-2"], "baseline": {"degradation_started_at": "2026-09-08T03:23:34.862999Z",
                                           "onset": "change point"}}  # fmt: skip
    said = sentences.sentence(failure_mode="FM-2", evidence=ev)
    assert "Since 2026-09-08 03:23 UTC." in said, said


def test_fm6_names_the_stream_that_moved_most_first() -> None:
    """Stored JSON may order streams by name: the image stream at 9x its threshold leads,
    the text stream at 1.25x follows."""
    evidence = {"streams": {
        "a_text": {"fired": True, "statistic": 0.025, "threshold": 0.02, "n_current": 500,
                   "n_reference": 900},
        "b_image": {"fired": True, "statistic": 0.18, "threshold": 0.02, "n_current": 480,
                    "n_reference": 910},
    }}  # fmt: skip
    words = sentences.sentence(failure_mode="FM-6", evidence=evidence)
    assert words.startswith("Stream b_image moved") and "; stream a_text moved" in words, words
