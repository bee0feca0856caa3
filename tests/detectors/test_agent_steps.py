"""Steps are the agent's actions: wrappers, outer layers and the insides of actions are not."""

from __future__ import annotations

from typing import Any

from detectors.agent_steps import agent_steps
from detectors.records import from_rows


def span(sid: str, parent: str | None, kind: str, status: str = "ok", **kw: Any) -> dict:
    return {"span_id": sid, "parent_span_id": parent, "kind": kind, "status": status, **kw}


def steps_of(spans: list[dict]) -> list[tuple[str, str]]:
    (rec,) = from_rows([{"trace_id": "t", "agent": "a"}], [dict(s, trace_id="t") for s in spans])
    return [(s.name, s.status) for s in rec.steps]


def test_one_tool_exception_through_wrappers_is_one_error_step() -> None:
    # OpenInference: AGENT -> CHAIN "tools" -> TOOL raised; each wrapper failed with it.
    spans = [
        span("a", None, "agent", "error", name="agent", started_at=0.0),
        span("l1", "a", "llm", name="llm1", started_at=1.0),
        span("h", "l1", "step", name="POST", started_at=1.1),
        span("c", "a", "chain", "error", name="tools", started_at=2.0),
        span("t", "c", "tool", "error", name="lookup", error_type="KeyError", started_at=2.1),
        span("l2", "a", "llm", name="llm2", started_at=3.0),
    ]
    assert steps_of(spans) == [("llm1", "ok"), ("lookup", "error"), ("llm2", "ok")]


def test_openllmetry_workflow_and_tasks() -> None:
    # workflow (chain) -> task with children (a wrapper) -> tool; a leaf task is an action.
    spans = [
        span("w", None, "chain", "error", name="workflow", started_at=0.0),
        span("k", "w", "step", "error", name="task", started_at=1.0),
        span("t", "k", "tool", "error", name="tool", error_type="ValueError", started_at=1.5),
        span("o", "k", "llm", name="openai.chat", started_at=1.2),
        span("f", "w", "step", name="format_answer", started_at=3.0),
    ]
    assert steps_of(spans) == [("openai.chat", "ok"), ("tool", "error"), ("format_answer", "ok")]


def test_outer_layer_of_one_llm_call_is_not_a_second_step() -> None:
    spans = [
        span("f", None, "llm", "error", name="ChatOpenAI", started_at=0.0),
        span("p", "f", "llm", "error", name="openai.chat", started_at=0.1),
    ]
    assert steps_of(spans) == [("openai.chat", "error")]


def test_a_failure_inherited_from_a_child_step_is_not_the_parents_error() -> None:
    same = [
        span("t", None, "tool", "error", name="subagent", error_type="RateLimit", started_at=0.0),
        span("l", "t", "llm", "error", name="llm", error_type="RateLimit", started_at=1.0),
    ]
    assert steps_of(same) == [("subagent", "ok"), ("llm", "error")]
    own = [dict(same[0], error_type="ParseError"), same[1]]
    assert steps_of(own) == [("subagent", "error"), ("llm", "error")]


def test_flat_traces_keep_every_span_and_cycles_end() -> None:
    flat = [span("a", None, "agent"), span("b", None, "step"), span("c", None, "tool")]
    assert [s["span_id"] for s, _ in agent_steps(flat)] == ["a", "b", "c"]
    cycle = [span("x", "y", "step"), span("y", "x", "step")]
    assert agent_steps(cycle) == []


class _CountingSpan(dict[str, Any]):
    """A span that counts how often its fields are read."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        _CountingSpan.reads += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        _CountingSpan.reads += 1
        return super().__getitem__(key)


def _failing_chain(n: int) -> list[dict[str, Any]]:
    # A parent chain of failing LLM and tool steps, each with its own error type: every
    # step asks whether a failed step below shares its type, and none does.
    return [
        _CountingSpan(
            span(
                f"s{i}",
                f"s{i - 1}" if i else None,
                "llm" if i % 2 else "tool",
                "error",
                name=f"n{i}",
                error_type=f"E{i}",
                started_at=float(i),
            )  # fmt: skip
        )
        for i in range(n)
    ]


def test_a_deep_chain_of_failing_steps_costs_linear_reads() -> None:
    reads = []
    for n in (1_000, 12_000):
        spans = _failing_chain(n)
        _CountingSpan.reads = 0
        kept = agent_steps(spans)
        reads.append(_CountingSpan.reads / n)
        assert len(kept) == n and not any(inherited for _, inherited in kept)
    # the same reads per span at 12x the spans (the subtree walk read ~n per span)
    assert reads[1] <= reads[0] * 1.1 and reads[1] < 20


def test_a_parent_cycle_below_a_root_is_read_once() -> None:
    spans = [
        span("r", None, "agent"),
        span("a", "b", "tool", "error", error_type="E"),
        span("b", "a", "llm", "error", error_type="E"),
    ]
    # the cycle has no root: its first span in order ("a") is read as one, so "b" is below it
    assert [(s["span_id"], inherited) for s, inherited in agent_steps(spans)] == [
        ("a", True),
        ("b", False),
    ]


def test_a_trace_counts_the_tokens_of_its_model_calls_once() -> None:
    """A framework's LLM span around the provider's span for the same call is one step,
    so its tokens count once; ``total_tokens`` wins over input + output."""
    from detectors.records import from_rows

    spans = [
        {"trace_id": "t", "span_id": "a", "kind": "agent"},
        {"trace_id": "t", "span_id": "f", "parent_span_id": "a", "kind": "llm",
         "total_tokens": 900},
        {"trace_id": "t", "span_id": "p", "parent_span_id": "f", "kind": "llm",
         "input_tokens": 700, "output_tokens": 200, "cost": 0.002},
        {"trace_id": "t", "span_id": "l", "parent_span_id": "a", "kind": "llm",
         "input_tokens": 300, "total_tokens": 350},
        {"trace_id": "t", "span_id": "x", "parent_span_id": "a", "kind": "tool"},
    ]  # fmt: skip
    [record] = from_rows([{"trace_id": "t", "agent": "a"}], spans)
    assert record.tokens == 900 + 350 and record.cost == 0.002
