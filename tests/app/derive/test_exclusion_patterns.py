"""Exclusion patterns cannot make a text grow: one that matches the empty string is refused
when set, and one already stored (set before the check) strips nothing."""

from __future__ import annotations

import pytest

from app.derive.config import InputIdentity
from app.derive.identity import input_hash, normalised_input
from app.derive.patterns import MAX_TEXT_CHARS, strip_patterns


def test_stored_empty_matching_patterns_leave_the_text_as_long_as_it_was() -> None:
    text = "book flight ZFA04Y " * 50
    # x* replaced the empty string between every two characters: each pattern doubled the
    # text (ten made this one 1 MB; thirty-two, allowed per rule, ran out of memory)
    assert strip_patterns(text, ["x*"] * 10) == text
    long = text * 40  # cut to MAX_TEXT_CHARS, and no longer after any pattern
    assert len(strip_patterns(long, [r"\b", "(?:)", "a?", r"\d+"] * 8)) <= MAX_TEXT_CHARS


def test_the_hash_ignores_patterns_that_match_nothing_but_the_empty_string() -> None:
    text = "refund order 1234567 for Mia"
    plain = input_hash(text, exclude_patterns=[r"\b\d{6,}\b"])
    assert input_hash(text, exclude_patterns=[r"\b\d{6,}\b", "x*", r"\b"]) == plain
    assert normalised_input(text, exclude_patterns=["x*"]) == normalised_input(
        text, exclude_patterns=[]
    )


@pytest.mark.parametrize("pattern", ["x*", "a?", "(?:)", "$", "^", "b|"])
def test_a_pattern_matching_the_empty_string_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"exclude_patterns\[1\]"):
        InputIdentity(exclude_patterns=["ticket-\\d+", pattern])
