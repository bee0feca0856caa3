"""Each failure mode, injected into a real instrumented agent, opens its default monitor's alert.

The agents are real: a LangGraph graph under OpenInference's LangChain instrumentation and
a plain ``openai`` client under OpenTelemetry's ``openai-v2``, both exporting OTLP to a live
Telltale, with content capture on, against the fake OpenAI server
(``fake_openai.py``), on a simulated clock. The failure is injected in the agent's or the
model's behaviour (seeded), never in what is sent to Telltale. Each test follows the
timeline of :mod:`tests.instrumentations.e2e`: 8 clean hours after which none of the seven
default monitors (default parameters and windows) fires, then 2 injected hours in which
the mode's monitor opens an alert through the scheduler tick and the alert lifecycle. Each
prints the runs and the evidence of the run that opened the alert.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.models.base import utcnow
from app.monitors.defaults import WINDOW
from app.settings import Settings
from tests.conftest import LiveServer
from tests.instrumentations.conftest import RunAgent
from tests.instrumentations.e2e import CLEAN_H, INJECTED_H, ONSET, T0, Telltale, clock_env, report
from tests.instrumentations.test_real_instrumentations import no_export_errors

RATE = 40  # traces per simulated hour


@pytest.fixture
def telltale(
    live_server: LiveServer, make_key: Any, engine: Any, settings: Settings
) -> Iterator[Telltale]:
    tt = Telltale(live_server.url, make_key(role="admin"), engine, settings)
    tt.create_defaults()
    yield tt


def phases(
    run: Any, *, clean: dict[str, str], injected: dict[str, str], rate: int = RATE
) -> list[str]:
    """Run the agent clean for 8 h from T0, then injected for 2 h; return their stdouts."""
    out = []
    for start, hours, env in ((T0, CLEAN_H, clean), (ONSET, INJECTED_H, injected)):
        n = int(rate * hours)
        done: subprocess.CompletedProcess[str] = run(**clock_env(start, hours, n), **env, n=n)
        no_export_errors(done)
        out.append(done.stdout)
    return out


def derive(telltale: Telltale) -> None:
    """The derive job over everything the agents sent (settled: their exporters flushed)."""
    from app.derive.job import derive_pending

    started = time.perf_counter()
    report = derive_pending(telltale.engine, now=utcnow(), settle_seconds=0.0)
    took = time.perf_counter() - started
    print(f"derived {report.traces} traces, {report.embeddings} text embeddings in {took:.1f} s")
    assert report.traces > 0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_fm1_compounding_langgraph(run_agent: RunAgent, telltale: Telltale) -> None:
    """FM-1: after a failed model call the later ones fail with 60% instead of 10%."""

    def run(n: int, **env: str) -> subprocess.CompletedProcess[str]:
        return run_agent("openinference", "openinference_langchain_chain", FM1_TRACES=str(n), **env)

    printed = phases(
        run,
        clean={"FM1_MODE": "independent", "FM1_SEED": "11"},
        injected={"FM1_MODE": "compounding", "FM1_SEED": "12", "FM1_P_AFTER": "0.6"},
    )
    assert all(re.search(r"model failures: \d+", p) for p in printed), printed
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-1")
    report("FM-1", clean, runs, opened, "reference_ratio", "compounding_ratio", "sub_tests")
    assert opened.statistic is not None and opened.statistic > 1.5


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_fm2_tool_cascade_openai_v2(run_agent: RunAgent, telltale: Telltale) -> None:
    """FM-2: the session service gets flaky (8% -> 30% failures) and the tools after a
    failed ``open_session`` fail with it (85% instead of 8%)."""

    def run(n: int, **env: str) -> subprocess.CompletedProcess[str]:
        return run_agent("otel", "support_agent", AGENT_TRACES=str(n), **env)

    injected = {"AGENT_SEED": "22", "AGENT_CASCADE": "1", "AGENT_SESSION_P": "0.3"}
    phases(run, clean={"AGENT_SEED": "21"}, injected=injected, rate=90)
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-2")
    report(
        "FM-2",
        clean,
        runs,
        opened,
        "cascade_lift",
        "reference_lift",
        "fisher_p_value",
        "cascade_depths",
        "cascade_tools",
    )
    assert opened.statistic is not None and opened.statistic > 1.5


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_fm7_proxy_up_true_down_langgraph(
    run_agent: RunAgent, telltale: Telltale, tmp_path: Path
) -> None:
    """FM-7: a prompt tuned to delight customers: the LLM judge's helpfulness rises while
    fewer tickets are resolved (the model praises and skips the order lookup)."""
    telltale.put(
        "/api/v1/project/score-roles",
        {"roles": {"helpfulness": "proxy", "resolved": "true"}, "label_sources": ["delayed"]},
    )
    files = [tmp_path / "clean.jsonl", tmp_path / "injected.jsonl"]

    def run(n: int, **env: str) -> subprocess.CompletedProcess[str]:
        return run_agent(
            "openinference", "langgraph_support", AGENT_TRACES=str(n), AGENT_JUDGE="1", **env
        )

    phases(
        run,
        clean={"AGENT_SEED": "71", "OUTCOMES_FILE": str(files[0])},
        injected={"AGENT_SEED": "72", "AGENT_FLATTER": "1", "OUTCOMES_FILE": str(files[1])},
    )
    for f in files:  # the ticket system's verdicts, 30 minutes after each trace
        telltale.post_outcomes(str(f), name="resolved", field="resolved", delay_s=1800)
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-7")
    report("FM-7", clean, runs, opened, "proxy_rose", "true_fell")
    ev = opened.evidence
    assert [p["name"] for p in ev["proxy_rose"]] == ["helpfulness"], ev
    assert [t["name"] for t in ev["true_fell"]] == ["resolved"], ev


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_fm5_eval_overfitting_openai_v2(run_agent: RunAgent, telltale: Telltale) -> None:
    """FM-5: version v2's model is tuned on the eval harness: the harness's ``Where is order
    N?`` still passes, half of production's differently worded questions now fail. Eval
    runs are the same agent with ``deployment.environment=eval`` (the derived source)."""

    def run_both(version: str, seed: int, start: Any, hours: float, **env: str) -> None:
        n = int(25 * hours)
        for i, (where, questions) in enumerate((("production", "orders"), ("eval", "eval"))):
            attrs = f"service.version={version},deployment.environment={where}"
            done = run_agent(
                "otel", "support_agent", AGENT_TRACES=str(n), OTEL_RESOURCE_ATTRIBUTES=attrs,
                AGENT_QUESTIONS=questions, AGENT_SEED=str(seed + i), **clock_env(start, hours, n),
                **env,
            )  # fmt: skip
            no_export_errors(done)

    # The gap needs the derived source only; the input-coverage sub-test would read the
    # MiniLM input vectors (it does not fire here), so the embeddings are off (faster).
    telltale.put("/api/v1/project/derived-fields", {"text_embeddings": {"enabled": False}})
    run_both("v1", 51, T0, CLEAN_H)
    run_both("v2", 53, ONSET, INJECTED_H, AGENT_MODEL="gpt-4o-mini-evalfit")
    derive(telltale)
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-5")
    report("FM-5", clean, runs, opened, "gaps")
    (gap,) = [g for g in opened.evidence["gaps"] if g["fired"]]
    assert gap["agent_version"] == "v2" and gap["eval_success"] > gap["production_success"], gap


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_fm3_nondeterministic_decisions_langgraph(run_agent: RunAgent, telltale: Telltale) -> None:
    """FM-3: the same 30 questions recur; the model's temperature goes 0 -> 1 and the same
    question is now sometimes answered without looking the order up (derived input
    identity and decision: the executed tools and the finish reason)."""

    def run(n: int, **env: str) -> subprocess.CompletedProcess[str]:
        return run_agent(
            "openinference", "langgraph_support", AGENT_TRACES=str(n), AGENT_INPUTS="30", **env
        )

    # Decisions need content capture only; the text embeddings (output spread, paraphrase
    # groups) are a second opinion this test does not need, so they are off (faster).
    telltale.put("/api/v1/project/derived-fields", {"text_embeddings": {"enabled": False}})

    phases(
        run,
        clean={"AGENT_SEED": "31"},
        injected={"AGENT_SEED": "32", "AGENT_TEMPERATURE": "1.0"},
    )
    derive(telltale)
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-3")
    report("FM-3", clean, runs, opened, "decision_disagreement",
           "reference_decision_disagreement", "groups", "reference_groups")  # fmt: skip
    ev = opened.evidence
    assert ev["decision_disagreement"] >= ev["reference_decision_disagreement"] + 0.05, ev


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_fm4_model_degrades_while_labels_stop_openai_v2(
    run_agent: RunAgent, telltale: Telltale, tmp_path: Path
) -> None:
    """FM-4: resolved-ticket labels arrive 3 h after each trace, then stop; meanwhile the
    model is swapped for a cheaper one whose answers are right less often (its self-reported
    confidence, the derived ``confidence``, falls with them): no label shows the drop, the
    calibrated confidence does."""
    # The confidence the model reports in its JSON answer; no text embeddings (not needed).
    rules = {"confidence": {"field": "$.confidence"}, "text_embeddings": {"enabled": False}}
    telltale.put("/api/v1/project/derived-fields", rules)
    telltale.put(
        "/api/v1/project/score-roles", {"roles": {"resolved": "true"}, "label_sources": ["delayed"]}
    )
    labels = tmp_path / "clean.jsonl"

    def run(n: int, **env: str) -> subprocess.CompletedProcess[str]:
        return run_agent("otel", "support_agent", AGENT_TRACES=str(n), AGENT_JSON="1", **env)

    phases(
        run,
        clean={"AGENT_SEED": "41", "OUTCOMES_FILE": str(labels)},
        injected={"AGENT_SEED": "42", "AGENT_MODEL": "gpt-4.1-nano"},
    )
    telltale.post_outcomes(str(labels), name="resolved", field="resolved", delay_s=3 * 3600)
    derive(telltale)
    # FM-4's default reads 8 h against a day of baseline, more history than this 10-hour
    # timeline holds: the detector is tested here on the other monitors' 2 h / 4 h windows.
    telltale.patch_monitor("FM-4", {"selection": dict(WINDOW)})
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-4")
    report("FM-4", clean, runs, opened, "summary", "label_coverage", "reference_accuracy",
           "estimated_accuracy", "drop_lower_bound", "needs_labels")  # fmt: skip
    assert opened.evidence["label_coverage"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_fm6_silent_input_drift_openai_v2(run_agent: RunAgent, telltale: Telltale) -> None:
    """FM-6: customers start asking about billing in new words; tool and answer failures
    stay as they were. The derived MiniLM ``support-agent.input`` stream drifts (MMD) while
    FM-1 and FM-2, which run beside it, stay quiet: the drift is silent."""

    def run(n: int, **env: str) -> subprocess.CompletedProcess[str]:
        return run_agent("otel", "support_agent", AGENT_TRACES=str(n), **env)

    phases(
        run,
        clean={"AGENT_SEED": "61"},
        injected={"AGENT_SEED": "62", "AGENT_QUESTIONS": "billing"},
        rate=30,  # MiniLM on 2 shared cores embeds ~10-20 texts/s: keep the texts few
    )
    derive(telltale)
    clean = telltale.clean_check()
    runs, opened = telltale.injected_check("FM-6", quiet=("FM-1", "FM-2"))
    report("FM-6", clean, runs, opened, "streams", "silent", "error_rate_alerts_open")
    assert opened.evidence["silent"] is True
