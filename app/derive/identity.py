"""Input identity: one hash for every run of the same input, whatever varies around it.

The hashed text is the user side of the trace's first LLM call (its user messages' text;
tool results and assistant turns are no input; the system prompt only when the project
asks for it), with the project's exclude patterns removed, then Unicode-normalised (NFKC),
case-folded and with runs of whitespace made one space. The hash is the first 32 hex
digits of its SHA-256 (128 bits: no collision among any realistic number of inputs).

Paraphrases get distinct hashes by design (an exact identity is what "repeated input"
means to FM-3 and FM-5); their *approximate* identity is the input group of
:mod:`app.derive.groups`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from app.derive.patterns import strip_patterns

_SPACE = re.compile(r"\s+")


def normalised_input(text: str, *, exclude_patterns: list[str]) -> str:
    """The text the input hash is computed from.

    >>> normalised_input("  Where is ORDER 42?\\n(sent 2025-01-02T10:00:00Z)", exclude_patterns=[
    ...     r"\\d{4}-\\d{2}-\\d{2}T[0-9:]+Z"])
    'where is order 42? (sent )'
    """
    stripped = strip_patterns(text, exclude_patterns)
    folded = unicodedata.normalize("NFKC", stripped).casefold()
    return _SPACE.sub(" ", folded).strip()


def embedding_text(text: str, exclude_patterns: list[str]) -> str | None:
    """The input as the encoder sees it: exclusions removed, whitespace collapsed.

    >>> embedding_text("Where is order 42?  (at 2025-01-02)", [r"\\(at [0-9-]+\\)"])
    'Where is order 42?'
    """
    text = _SPACE.sub(" ", strip_patterns(text, exclude_patterns)).strip()
    return text or None


def input_hash(text: str, *, exclude_patterns: list[str]) -> str | None:
    """The identity of an input, or None when nothing of it is left to hash.

    >>> a = input_hash("Refund order 42", exclude_patterns=[])
    >>> a == input_hash("refund   ORDER 42 ", exclude_patterns=[]), len(a)
    (True, 32)
    """
    normal = normalised_input(text, exclude_patterns=exclude_patterns)
    if not normal:
        return None
    return hashlib.sha256(normal.encode()).hexdigest()[:32]
