"""User patterns of the derived-field rules, matched in linear time with RE2.

The same engine and memory bound as silence matchers (:mod:`app.alerts.patterns`, the fix
for a pattern that froze the process): a pattern such as ``(a+)+$`` runs in time linear
in the text, and one RE2 cannot build within the bound is refused when the rule is set.
Texts are also cut to :data:`MAX_TEXT_CHARS` before matching, so one huge prompt costs
at most that much per pattern.

An exclusion replaces what it matches by one space, so only an empty match can make the
text longer: ``x*`` matched between every two characters and doubled the text, and twelve
such patterns held every project's derivation for minutes before memory ran out. A pattern
that matches the empty string is refused when it is set (:func:`compile_exclusion`), and
stripping replaces empty matches (``\b``, or a pattern stored before the check) by nothing,
so the text never grows.
"""

from __future__ import annotations

from typing import Any

from app.alerts.patterns import compile_label_pattern

MAX_TEXT_CHARS = 20_000


def compile_user_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; ``ValueError`` naming the problem if RE2 refuses it."""
    return compile_label_pattern(pattern)


def compile_exclusion(pattern: str) -> Any:
    """The compiled pattern of an exclusion; ``ValueError`` if RE2 refuses it or it
    matches the empty string (it would strip nothing and cost a match at every position).

    >>> compile_exclusion("x*")
    Traceback (most recent call last):
    ...
    ValueError: matches the empty string; an exclusion must match at least one character
    """
    compiled = compile_user_pattern(pattern)
    if compiled.search("") is not None:
        raise ValueError("matches the empty string; an exclusion must match at least one character")
    return compiled


def _space_unless_empty(match: Any) -> str:
    return " " if match.group(0) else ""


def strip_patterns(text: str, patterns: list[str]) -> str:
    """``text`` with every match of every pattern replaced by a space, in order.

    >>> strip_patterns("order 1234567 at 2025-01-02T03:04:05Z", [r"\\d{6,}", r"\\d{4}-\\d\\d-\\d\\dT\\S+"])
    'order   at  '
    >>> strip_patterns("abc", ["x*", r"\\b"])  # empty matches strip nothing and add nothing
    'abc'
    """
    text = text[:MAX_TEXT_CHARS]
    for pattern in patterns:
        text = compile_user_pattern(pattern).sub(_space_unless_empty, text)
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
