"""OpenLLMetry (``traceloop-sdk``) around the ``openai`` client, at its default settings.

``Traceloop.init`` exports traces, metrics and logs to TRACELOOP_BASE_URL with
TRACELOOP_HEADERS (set by the test to Telltale and an ingest key); telemetry to Traceloop
itself is off. Each trace is one call of an ``@agent`` function (``traceloop.span.kind``
``agent``), running plain_loop's tool loop and failing call. The session is OpenLLMetry's
``@conversation`` (``gen_ai.conversation.id`` on every span inside, the agent span
included), the user an association (``traceloop.association.properties.user_id`` on every
span started after it is set).
"""

from __future__ import annotations

import openai
from plain_loop import SESSION_ID, USER_ID, failing_call, tool_loop
from traceloop.sdk import Traceloop
from traceloop.sdk.associations import AssociationProperty, Associations
from traceloop.sdk.decorators import agent, conversation

Traceloop.init(app_name="support-service", telemetry_enabled=False, disable_batch=True)
client = openai.OpenAI(max_retries=0)
Associations.set([(AssociationProperty.USER_ID, USER_ID)])


@conversation(conversation_id=SESSION_ID)
@agent(name="support-agent")
def tool_loop_agent() -> str:
    return tool_loop(client)


@conversation(conversation_id=SESSION_ID)
@agent(name="support-agent")
def failing_agent() -> None:
    failing_call(client)


tool_loop_agent()
try:
    failing_agent()
except openai.InternalServerError:
    pass
