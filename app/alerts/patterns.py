"""Label patterns of silences (``=~`` / ``!~``), matched in linear time with RE2.

Python's ``re`` backtracks: a pattern such as ``(.*)(.*)...X`` takes exponential time on a
label it does not match, and one such silence froze the whole process. RE2 (the engine
Alertmanager uses, through Go's ``regexp``) guarantees time linear in the input and
bounds its memory, at the price of no backreferences or lookaround, which label
matchers do not need. Patterns are anchored on both ends, as in Alertmanager.
"""

from __future__ import annotations

from functools import lru_cache

import re2

# A DFA for any pattern we accept fits in this; larger ones are refused at creation.
_MAX_MEMORY_BYTES = 4 << 20


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = _MAX_MEMORY_BYTES
    options.log_errors = False
    return options


@lru_cache(maxsize=1024)
def compile_label_pattern(pattern: str) -> re2._Regexp:
    """The compiled pattern; ``ValueError`` naming the problem if RE2 refuses it.

    >>> compile_label_pattern("warn.*").fullmatch("warning") is not None
    True
    >>> compile_label_pattern("(?=x)")
    Traceback (most recent call last):
    ...
    ValueError: not a valid RE2 regular expression: invalid perl operator: (?=
    """
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ValueError(f"not a valid RE2 regular expression: {reason}") from None
