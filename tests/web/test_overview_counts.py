"""The overview's readiness counts are reused for a minute, per database and window."""

from __future__ import annotations

from types import SimpleNamespace

from app.web.queries import ExpiringCounts

BIG, SMALL = SimpleNamespace(traces=50_000), SimpleNamespace(traces=30)


def test_counts_of_large_windows_expire_after_their_ttl() -> None:
    now = [100.0]
    cache = ExpiringCounts(ttl=60.0, clock=lambda: now[0])
    assert cache.get("w") is None and bool(cache)  # empty, yet not falsy
    cache["w"] = BIG
    now[0] += 59.0
    assert cache.get("w") is BIG
    now[0] += 2.0
    assert cache.get("w") is None
    cache["x"] = BIG  # setting prunes what expired
    assert list(cache._items) == ["x"]


def test_small_windows_are_always_counted_afresh() -> None:
    cache = ExpiringCounts()
    cache["w"] = SMALL  # a project's first traces show at once
    assert cache.get("w") is None
