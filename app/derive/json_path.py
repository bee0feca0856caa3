"""The JSON path subset the derived-field rules accept: ``$``, ``.name``, ``['name']``, ``[N]``.

Enough to name a field of an agent's JSON answer (``$.action``, ``$.result.items[0].id``,
``$['final answer']``); no filters, wildcards or recursion, so a path is a fixed list of
steps and reading it costs its length.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson

_STEP = re.compile(r"""\.([A-Za-z_][A-Za-z0-9_\-]*)|\[(\d+)\]|\['([^'\\]*)'\]|\["([^"\\]*)"\]""")
MAX_STEPS = 32


@lru_cache(maxsize=256)
def parse_json_path(path: str) -> tuple[str | int, ...]:
    """The steps of ``path``; ``ValueError`` saying where it stops being valid.

    >>> parse_json_path("$.result.items[0]['id']")
    ('result', 'items', 0, 'id')
    >>> parse_json_path("$.a[*]")
    Traceback (most recent call last):
    ...
    ValueError: not a supported JSON path at character 3 ('[*]'): use $.name, $['name'] or $[N]
    """
    if not path.startswith("$"):
        raise ValueError("a JSON path starts with '$'")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        match = _STEP.match(path, at)
        if match is None:
            raise ValueError(
                f"not a supported JSON path at character {at} ({path[at : at + 12]!r}): "
                "use $.name, $['name'] or $[N]"
            )
        name, index, quoted, dquoted = match.groups()
        steps.append(int(index) if index is not None else next(
            s for s in (name, quoted, dquoted) if s is not None
        ))  # fmt: skip
        at = match.end()
    if len(steps) > MAX_STEPS:
        raise ValueError(f"a JSON path has at most {MAX_STEPS} steps")
    return tuple(steps)


def _as_json(text: str) -> Any:
    body = text.strip()
    if body.startswith("```"):  # a fenced block, as models like to answer
        body = body.strip("`")
        body = body[4:] if body.lower().startswith("json") else body
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if 0 <= start < end:
            try:
                return orjson.loads(body[start : end + 1])
            except orjson.JSONDecodeError:
                return None
        return None


def read_json_path(path: str, text: str) -> Any:
    """The value at ``path`` in ``text`` read as JSON (a fenced or embedded object too),
    or None when the text is no JSON or the path leads nowhere.

    >>> read_json_path("$.action", 'Sure! {"action": "refund", "amount": 3}')
    'refund'
    >>> read_json_path("$.items[1]", '```json\\n{"items": [1, 2]}\\n```'), read_json_path("$.x", "no")
    (2, None)
    """
    value = _as_json(text)
    for step in parse_json_path(path):
        if isinstance(step, int) and isinstance(value, list) and step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        else:
            return None
    return value
