"""Where a trace's session and user come from: every convention's attribute, in one place.

The OTLP receiver reads them from each span's attributes, then its resource's
(:mod:`app.otlp.trace_rows`); the native API from a trace's ``session_id`` / ``user_id``
fields, then its ``attributes`` (:mod:`app.ingest.events`). First key found wins, in the
order below. What each instrumentation sends (tests/instrumentations):

- OpenTelemetry GenAI: ``gen_ai.conversation.id`` on the application's ``invoke_agent``
  span (``openai-v2`` itself sends neither: Chat Completions has no conversation); ``user.id``
  (``enduser.id`` before semantic conventions 1.26) where the application sets it;
- OpenInference: ``session.id`` and ``user.id`` on every span made inside
  ``using_session`` / ``using_user`` (the same keys as Langfuse and Arize read);
- OpenLLMetry: ``gen_ai.conversation.id`` inside ``@conversation``, and
  ``traceloop.association.properties.<key>`` for ``Traceloop.set_association_properties``
  or ``Associations.set`` (``session_id``, ``user_id``); ``gen_ai.user`` is the ``user`` an
  OpenAI request names;
- OpenLIT: no session for a plain OpenAI client; ``gen_ai.request.user`` is the ``user`` an
  OpenAI request names (OpenAI documents it as your end user's id);
- Langfuse's SDK: ``langfuse.session.id`` and ``langfuse.user.id``.

A value is a string or an integer (as its text), cut to :data:`MAX_ID_CHARS` characters as
the OTLP receiver cuts every trace field; an empty one counts as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SESSION_KEYS = (
    "session.id",
    "gen_ai.conversation.id",
    "langfuse.session.id",
    "traceloop.association.properties.session_id",
)
# The model request's ``user`` last: an application's own user id says it better.
USER_KEYS = (
    "user.id",
    "enduser.id",
    "langfuse.user.id",
    "traceloop.association.properties.user_id",
    "gen_ai.request.user",
    "gen_ai.user",
)
MAX_ID_CHARS = 128


def first_id(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` in ``attrs`` holding a usable id, as text, else None.

    >>> first_id({"gen_ai.conversation.id": "c-1", "session.id": ""}, SESSION_KEYS)
    'c-1'
    >>> first_id({"user.id": 42, "enduser.id": "x"}, USER_KEYS), first_id({"user.id": True}, USER_KEYS)
    ('42', None)
    """
    for key in keys:
        value = attrs.get(key)
        kind = type(value)
        if kind is str:
            if value:
                return value[:MAX_ID_CHARS]  # type: ignore[no-any-return]
        elif kind is int:  # not bool: ``type(True) is bool``
            return str(value)[:MAX_ID_CHARS]
    return None
