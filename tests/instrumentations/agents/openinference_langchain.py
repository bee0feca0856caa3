"""OpenInference's LangChain instrumentation around a LangGraph ReAct tool loop.

Two ``@tool``s; ``lookup_order`` raises, LangGraph's ToolNode turns the exception into an
error tool message and the model answers. A second run fails at the model
(HTTP 500, no retries) and the error leaves the graph.
"""

from __future__ import annotations

import os

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent
from openinference.instrumentation.langchain import LangChainInstrumentor
from otlp_setup import setup, shutdown

LangChainInstrumentor().instrument(tracer_provider=setup())


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def lookup_order(order_id: str) -> str:
    """Where an order is."""
    raise ConnectionError(f"order service unavailable for {order_id}")


model = ChatOpenAI(model="gpt-4o-mini", base_url=os.environ["OPENAI_BASE_URL"], max_retries=0)
# handle_tool_errors=True: the exception becomes an error ToolMessage the model reads.
tools = ToolNode([get_weather, lookup_order], handle_tool_errors=True)
agent = create_react_agent(model, tools, name="support-agent")
agent.invoke({"messages": [("user", "Weather in Paris, and where is order 42?")]})
try:
    agent.invoke({"messages": [("user", "Please fail [500]")]})
except Exception as exc:  # langchain-openai wraps openai's InternalServerError
    if "500" not in str(exc):
        raise
shutdown()
