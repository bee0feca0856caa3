"""Latency quantiles from mergeable sketches: DDSketch keys, stored sparse, merged dense.

A bucket's latencies are kept as a DDSketch (Masson, Rim and Lee, "DDSketch: a fast and
fully-mergeable quantile sketch with relative-error guarantees", VLDB 2019): each value is
counted under the key of its logarithmic bin, so any quantile of any union of buckets is
read back within 1 % of a true value of that rank, and merging is adding counts. Why this
sketch: the merge is exact (unlike t-digest, whose merges drift), the error is relative
(p99 of a 30 s tail is as good as p50 of 300 ms), and the keys come from the ``ddsketch``
package's :class:`~ddsketch.mapping.LogarithmicMapping`, the mapping Datadog's agents use,
not our own arithmetic. KLL would bound rank error instead, which is the wrong guarantee for
latency thresholds written in milliseconds.

Stored compactly (:func:`encode`): a version byte, the number of occupied keys (uint16),
then one packed record per key, its key (int16) and count (uint32), little-endian; a
bucket of a few hundred traces is a few hundred bytes, and a month of buckets joined is
one array of records once the 3-byte headers are cut out (:func:`decode_many`). Reading many buckets, :func:`accumulate` adds them into one dense
``(rows, keys)`` count matrix with numpy, so a window's quantile is a difference of
cumulative sums (:mod:`detectors.rules.series`), not a Python merge per bucket.

>>> blob = encode([120.0, 250.0, 250.0, 4000.0])
>>> keys, counts = decode(blob)
>>> int(counts.sum()), len(blob)
(4, 21)
>>> lo, dense = accumulate([blob, encode([300.0])], rows=[0, 0], n_rows=1)
>>> [round(v) for v in quantiles(dense, lo, 0.5)]  # within 1 % of 250
[252]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import numpy as np
from ddsketch.mapping import LogarithmicMapping

RELATIVE_ACCURACY = 0.01
MAPPING = LogarithmicMapping(RELATIVE_ACCURACY)
# Latencies are clamped to [MIN_MS, MAX_MS]: below a microsecond is "instant", above 10 days
# a broken clock; the keys then fit int16.
MIN_MS, MAX_MS = 1e-3, 864_000_000.0
_VERSION = 1
_HEAD = np.dtype([("version", "u1"), ("n", "<u2")])
_ENTRY = np.dtype([("key", "<i2"), ("count", "<u4")])  # packed: 6 bytes


KEY_MIN, KEY_MAX = MAPPING.key(MIN_MS), MAPPING.key(MAX_MS)


@functools.cache
def _upper_edges() -> np.ndarray:
    """The largest value of each key from ``KEY_MIN`` to ``KEY_MAX - 1``, found by
    bisection on the mapping's own ``key`` (so the vectorised lookup below agrees with it
    exactly, floating-point ties included)."""
    edges = np.empty(KEY_MAX - KEY_MIN)
    for i, k in enumerate(range(KEY_MIN, KEY_MAX)):
        lo, hi = MIN_MS, MAX_MS  # key(lo) <= k < key(hi)
        for _ in range(200):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if MAPPING.key(mid) <= k else (lo, mid)
        edges[i] = lo
    return edges


def keys_of(values_ms: Iterable[float]) -> np.ndarray:
    """The sketch key of each latency (ms): ``MAPPING.key`` of it, clamped, vectorised.

    >>> v = np.random.default_rng(0).lognormal(6, 2, 1000)
    >>> bool((keys_of(v) == [MAPPING.key(x) for x in v]).all())
    True
    """
    v = np.clip(np.asarray(list(values_ms) if not isinstance(values_ms, np.ndarray) else values_ms,
                           dtype=np.float64), MIN_MS, MAX_MS)  # fmt: skip
    return np.searchsorted(_upper_edges(), v, side="left").astype(np.int64) + KEY_MIN


def encode(values_ms: Iterable[float]) -> bytes:
    """A sketch of the latencies (ms), as stored; empty bytes for none."""
    keys = keys_of(values_ms)
    if keys.size == 0:
        return b""
    uniq, counts = np.unique(keys, return_counts=True)
    return _pack(uniq, counts)


def merge(blobs: Iterable[bytes]) -> bytes:
    """One sketch of the union of several."""
    found = [decode(b) for b in blobs if b]
    if not found:
        return b""
    keys = np.concatenate([k for k, _ in found])
    counts = np.concatenate([c for _, c in found])
    uniq, inverse = np.unique(keys, return_inverse=True)
    return _pack(uniq, np.bincount(inverse, weights=counts).astype(np.int64))


def _pack(keys: np.ndarray, counts: np.ndarray) -> bytes:
    head = np.array([(_VERSION, keys.size)], dtype=_HEAD).tobytes()
    entries = np.empty(keys.size, dtype=_ENTRY)
    entries["key"], entries["count"] = keys, counts
    return head + entries.tobytes()


def decode(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, counts)`` of a stored sketch."""
    if not blob:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    head = np.frombuffer(blob, dtype=_HEAD, count=1)[0]
    if int(head["version"]) != _VERSION:
        raise ValueError(f"unknown latency sketch version {int(head['version'])}")
    entries = np.frombuffer(blob, dtype=_ENTRY, count=int(head["n"]), offset=_HEAD.itemsize)
    return entries["key"].astype(np.int64), entries["count"].astype(np.int64)


def decode_many(blobs: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(blob index, keys, counts)`` of every entry of many stored sketches, decoded in
    one numpy pass (a month of buckets is tens of thousands of sketches: one
    :func:`decode` each cost a second where this costs tens of milliseconds)."""
    sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    if not sizes.any():
        return (np.empty(0, np.int64),) * 3  # type: ignore[return-value]
    buf = np.frombuffer(b"".join(blobs), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    have = sizes > 0
    starts, sizes, which = starts[have], sizes[have], np.flatnonzero(have)
    if (buf[starts] != _VERSION).any():
        raise ValueError("unknown latency sketch version")
    n = buf[starts + 1].astype(np.int64) | (buf[starts + 2].astype(np.int64) << 8)
    if (sizes != _HEAD.itemsize + _ENTRY.itemsize * n).any():
        raise ValueError("a latency sketch's length does not match its header")
    heads = (starts[:, None] + np.arange(_HEAD.itemsize)).ravel()
    entries = np.delete(buf, heads).view(_ENTRY)
    owner = np.repeat(np.arange(n.size), n)
    keys, counts = entries["key"].astype(np.int64), entries["count"].astype(np.int64)
    return which[owner], keys, counts


def accumulate(
    blobs: Sequence[bytes], *, rows: Sequence[int], n_rows: int
) -> tuple[int, np.ndarray]:
    """Add sketch ``blobs[i]`` into row ``rows[i]`` of a dense count matrix; return the key
    of its first column and the ``(n_rows, keys)`` matrix (no columns when all are empty).

    >>> lo, m = accumulate([encode([1.0, 1.0]), b"", encode([100.0])], rows=[1, 0, 1], n_rows=2)
    >>> m.sum(axis=1).tolist(), lo == MAPPING.key(1.0)
    ([0, 3], True)
    """
    owner, keys, counts = decode_many(blobs)
    if keys.size == 0:
        return 0, np.zeros((n_rows, 0), dtype=np.int64)
    lo, hi = int(keys.min()), int(keys.max())
    width = hi - lo + 1
    at_rows = np.asarray(rows, dtype=np.int64)[owner]
    flat = np.bincount(at_rows * width + (keys - lo), weights=counts, minlength=n_rows * width)
    return lo, flat.reshape(n_rows, width).astype(np.int64)


def quantiles(counts: np.ndarray, key_lo: int, q: float) -> np.ndarray:
    """The ``q`` quantile of each row of a dense count matrix (NaN for an empty row), read
    as DDSketch reads it: the value of the first key whose cumulative count passes
    ``q * (count - 1)``."""
    n = counts.shape[0]
    out = np.full(n, np.nan)
    if counts.shape[1] == 0:
        return out
    cum = np.cumsum(counts, axis=1)
    total = cum[:, -1]
    have = total > 0
    rank = q * (total[have] - 1)
    idx = (cum[have] > rank[:, None]).argmax(axis=1)
    out[have] = [MAPPING.value(int(k) + key_lo) for k in idx]
    return out


def count_above(counts: np.ndarray, key_lo: int, value_ms: float) -> np.ndarray:
    """How many values of each row lie in bins above ``value_ms``'s bin."""
    if counts.shape[1] == 0:
        return np.zeros(counts.shape[0], dtype=np.int64)
    k = MAPPING.key(min(max(float(value_ms), MIN_MS), MAX_MS)) - key_lo
    if k < 0:
        return counts.sum(axis=1)
    return counts[:, k + 1 :].sum(axis=1)
