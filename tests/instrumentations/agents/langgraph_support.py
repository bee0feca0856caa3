"""A LangGraph support agent under OpenInference's LangChain instrumentation (FM-3, FM-7).

A ``StateGraph`` of a model node (``ChatOpenAI`` bound to one tool, ``lookup_order``) and a
``ToolNode``, inside the application's own AGENT span ``support-agent``. Per trace, seeded
by ``AGENT_SEED``, the user asks one question:

- ``AGENT_INPUTS=K``: one of ``K`` fixed questions (the same inputs recur, FM-3); without
  it every question names a new order number;
- ``AGENT_TEMPERATURE`` (default 0): the model's sampling temperature; above 0 the fake
  model sometimes answers without looking the order up (FM-3's injected non-determinism);
- ``AGENT_FLATTER=1``: a system prompt tuned for delighted customers (``[flatter]``): the
  model praises and often skips the lookup (FM-7's injected proxy gaming);
- ``AGENT_JUDGE=1``: the one evaluator call: an LLM judge (a plain ``openai`` call, not
  traced) rates the answer's helpfulness 1-5 and the agent records it on an EVALUATOR span
  with OpenInference's ``get_evaluation_attributes`` (annotator LLM, trace scope).

``OUTCOMES_FILE``: one JSON line per trace, ``{"otel_trace_id", "at", "looked_up",
"resolved"}``: whether the ticket was resolved, learned later (0.85 when the order was looked
up, else 0.1); the tests post it through the feedback API as the delayed true score.
"""

from __future__ import annotations

import json
import os
import random

import openai
import simclock
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openinference.instrumentation import get_evaluation_attributes
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry import trace
from otlp_setup import setup, shutdown

simclock.patch_datetime_in("langchain_core.tracers.core")  # LangChain's run times
provider = setup()
LangChainInstrumentor().instrument(tracer_provider=provider)
tracer = trace.get_tracer("support-app")

N = int(os.environ["AGENT_TRACES"])
SEED = int(os.environ.get("AGENT_SEED", "0"))
INPUTS = int(os.environ.get("AGENT_INPUTS", "0"))
TEMPERATURE = float(os.environ.get("AGENT_TEMPERATURE", "0"))
FLATTER = os.environ.get("AGENT_FLATTER") == "1"
JUDGE = os.environ.get("AGENT_JUDGE") == "1"
SYSTEM = "You are a support agent. [cite]" + (" Delight the customer. [flatter]" if FLATTER else "")
rng = random.Random(SEED)
# Distinct intents: near-duplicates would share one approximate input group (FM-3's unit).
TOPICS = (
    "Where is my parcel {n}? It is late.",
    "Can I change the delivery address of order {n} to my office?",
    "The blender from order {n} arrived broken, I want a replacement.",
    "How do I return the shoes in order {n}, they are too small?",
    "Was I charged twice for order {n}?",
    "Please cancel order {n} before it ships.",
    "Order {n} is missing one of the three books I bought.",
    "Can you gift-wrap order {n} for my mother's birthday?",
    "Is order {n} covered by the two-year warranty?",
    "The courier left order {n} at the wrong house.",
    "Can I pay for order {n} in three instalments?",
    "Why was my discount code not applied to order {n}?",
    "I need an invoice with my company's VAT number for order {n}.",
    "Order {n} says delivered but my mailbox is empty.",
    "Can order {n} be shipped to Canada instead?",
    "The laptop in order {n} does not turn on.",
    "How long does a refund for order {n} take to reach my card?",
    "I ordered the wrong colour in order {n}, can I swap it?",
    "Will order {n} arrive before Christmas?",
    "The package for order {n} was opened and resealed.",
    "Can I pick up order {n} from your store in Lyon?",
    "My order {n} was delivered to a locker I cannot open.",
    "Do you price-match? Order {n} is cheaper elsewhere now.",
    "The size guide was wrong for the jacket in order {n}.",
    "I got someone else's order, the label says {n}.",
    "Can I add a phone case to order {n} before dispatch?",
    "The assembly instructions are missing from order {n}.",
    "Order {n} was damaged by rain on my doorstep.",
    "How do I track order {n} with the courier's app?",
    "Can you resend the confirmation e-mail for order {n}?",
)
fixed = [TOPICS[k % len(TOPICS)].format(n=1000 + 37 * k) for k in range(INPUTS)]


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: in transit"


model = ChatOpenAI(
    model="gpt-4o-mini",
    base_url=os.environ["OPENAI_BASE_URL"],
    max_retries=0,
    temperature=TEMPERATURE,
).bind_tools([lookup_order])
judge = openai.OpenAI(max_retries=0)


def call_model(state: MessagesState) -> dict:
    return {"messages": [model.invoke([("system", SYSTEM), *state["messages"]])]}


graph = StateGraph(MessagesState)
graph.add_node("agent", call_model)
graph.add_node("tools", ToolNode([lookup_order]))
graph.add_edge(START, "agent")
graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
graph.add_edge("tools", "agent")
agent = graph.compile(name="support-graph")


def helpfulness(answer: str) -> float:
    prompt = f"Rate the helpfulness of this answer from 1 to 5: {answer}"
    reply = judge.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    return float(str(reply.choices[0].message.content))


outcomes = []
for i in range(N):
    simclock.trace(i)
    question = rng.choice(fixed) if fixed else f"Where is my order {rng.randint(1000, 9999)}?"
    span_attrs = {"openinference.span.kind": "AGENT"}
    with tracer.start_as_current_span("support-agent", attributes=span_attrs) as span:
        trace_id = format(span.get_span_context().trace_id, "032x")
        state = agent.invoke({"messages": [("user", question)]})
        answer = str(state["messages"][-1].content)
        looked_up = any(isinstance(m, ToolMessage) for m in state["messages"])
        if JUDGE:
            score = helpfulness(answer)
            evaluation = [{"name": "helpfulness", "score": score, "annotator_kind": "LLM"}]
            judged = {
                "openinference.span.kind": "EVALUATOR",
                **get_evaluation_attributes(evaluations=evaluation, scope="trace"),
            }
            with tracer.start_as_current_span("judge", attributes=judged):
                pass
    resolved = rng.random() < (0.85 if looked_up else 0.1)
    at = simclock.now_ns() / 1e9
    outcomes.append(
        {"otel_trace_id": trace_id, "at": at, "looked_up": looked_up, "resolved": resolved}
    )
    if i % 10 == 9:
        provider.force_flush()
if os.environ.get("OUTCOMES_FILE"):
    with open(os.environ["OUTCOMES_FILE"], "w") as f:
        f.writelines(json.dumps(o) + "\n" for o in outcomes)
print(f"looked up: {sum(o['looked_up'] for o in outcomes)} of {N}")
shutdown()
