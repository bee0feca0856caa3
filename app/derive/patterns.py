"""User patterns of the derived-field rules, matched in linear time with RE2.

The same engine and memory bound as silence matchers (:mod:`app.alerts.patterns`, the fix
for a pattern that froze the process): a pattern such as ``(a+)+$`` runs in time linear
in the text, and one RE2 cannot build within the bound is refused when the rule is set.
Texts are also cut to :data:`MAX_TEXT_CHARS` before matching, so one huge prompt costs
at most that much per pattern.
"""

from __future__ import annotations

from typing import Any

from app.alerts.patterns import compile_label_pattern

MAX_TEXT_CHARS = 20_000


def compile_user_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; ``ValueError`` naming the problem if RE2 refuses it."""
    return compile_label_pattern(pattern)


def strip_patterns(text: str, patterns: list[str]) -> str:
    """``text`` with every match of every pattern replaced by a space, in order.

    >>> strip_patterns("order 1234567 at 2025-01-02T03:04:05Z", [r"\\d{6,}", r"\\d{4}-\\d\\d-\\d\\dT\\S+"])
    'order   at  '
    """
    text = text[:MAX_TEXT_CHARS]
    for pattern in patterns:
        text = compile_user_pattern(pattern).sub(" ", text)
    return text


def extract(pattern: str, text: str) -> str | None:
    """Group 1 of the first match (the whole match when the pattern has no group), or None.

    >>> extract(r"ACTION: (\\w+)", "think... ACTION: refund"), extract(r"\\d+", "no digits")
    ('refund', None)
    """
    compiled = compile_user_pattern(pattern)
    match = compiled.search(text[:MAX_TEXT_CHARS])
    if match is None:
        return None
    value = match.group(1) if compiled.groups >= 1 else match.group(0)
    return None if value is None else str(value)
