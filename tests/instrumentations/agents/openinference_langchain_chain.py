"""A LangGraph tool loop, one tool per turn for K turns, over many traces (FM-1).

OpenInference's LangChain instrumentation, as in ``openinference_langchain.py``, around a
``StateGraph`` of a model node and a ``ToolNode``: the fake model asks for ``step_0`` ..
``step_<K-1>`` one after the other (``[chain=K]``). A model call that fails (HTTP 500) is
caught by the model node, which falls back to the next step of its plan (or a canned
answer) and the loop goes on: a trace can carry a failed decision step and later ones (what
FM-1 measures), with no retry after it. Per trace, drawn from ``FM1_SEED``:

- tool calls fail (raise) with ``FM1_TOOL_P``, independently, in both modes (FM-2's
  business: they must not look like compounding decision errors);
- model calls fail with ``FM1_P``; with ``FM1_MODE=compounding`` a model call after an
  earlier failed one fails with ``FM1_P_AFTER`` instead (a real compounding).

The failed model turns go to the fake server in the user message (``[fail=2,3]``), which
fails the first request of those turns. The span processor is flushed every 10 traces so
its queue never drops spans. ``SIM_START_EPOCH`` runs it on a simulated clock
(``simclock.py``). Prints the failures it caused (the test compares).
"""

from __future__ import annotations

import os
import random

import openai
import simclock
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openinference.instrumentation.langchain import LangChainInstrumentor
from otlp_setup import setup, shutdown

simclock.patch_datetime_in("langchain_core.tracers.core")  # LangChain's run times
provider = setup()
LangChainInstrumentor().instrument(tracer_provider=provider)

K = int(os.environ.get("FM1_STEPS", "4"))
N = int(os.environ["FM1_TRACES"])
MODE = os.environ["FM1_MODE"]
P = float(os.environ.get("FM1_P", "0.1"))
P_AFTER = float(os.environ.get("FM1_P_AFTER", "0.5"))
TOOL_P = float(os.environ.get("FM1_TOOL_P", "0.15"))
SEED = int(os.environ.get("FM1_SEED", "0"))
rng = random.Random(SEED)
tool_plan = [False] * K
counts = {"tool": 0, "model": 0}


def _make_tool(n: int):  # noqa: ANN202 - a LangChain tool object
    @tool(f"step_{n}")
    def step(n: int) -> str:
        """One step of the task."""
        if tool_plan[n]:
            counts["tool"] += 1
            raise ConnectionError(f"step {n} backend unavailable")
        return f"step {n} done"

    return step


tools = [_make_tool(n) for n in range(K)]
model = ChatOpenAI(
    model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], max_retries=0
).bind_tools(tools)


def call_model(state: MessagesState) -> dict:
    try:
        return {"messages": [model.invoke(state["messages"])]}
    except openai.InternalServerError:
        done = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
        if done >= K:
            return {"messages": [AIMessage(content="Done (fallback answer).")]}
        call = {"name": f"step_{done}", "args": {"n": done}, "id": f"fallback_{done}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}


graph = StateGraph(MessagesState)
graph.add_node("agent", call_model)
graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
graph.add_edge(START, "agent")
graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
graph.add_edge("tools", "agent")
agent = graph.compile(name="chain-agent")

for i in range(N):
    simclock.trace(i)
    tool_plan[:] = [rng.random() < TOOL_P for _ in range(K)]
    failed_turns, earlier = [], False
    for turn in range(K + 1):  # K tool turns and the final answer
        p = P_AFTER if (earlier and MODE == "compounding") else P
        if rng.random() < p:
            failed_turns.append(turn)
            earlier = True
    counts["model"] += len(failed_turns)
    tag = f" [fail={','.join(map(str, failed_turns))}]" if failed_turns else ""
    agent.invoke({"messages": [("user", f"Do task {SEED}-{i} [chain={K}]{tag}")]})
    if i % 10 == 9:
        provider.force_flush()
print(f"tool failures: {counts['tool']} model failures: {counts['model']}")
shutdown()
