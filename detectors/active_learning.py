"""Active-learning selection: k-center greedy (core-set) over embeddings.

Each pick is the candidate farthest from reference ∪ labeled ∪ already-picked points
(Gonzalez 1985; Sener & Savarese 2018, "core-set"), so picks are novel and diverse, and
the coverage radius max_i min_c |x_i − c| is within 2× of optimal. Distances are
Euclidean (for L2-normalised embeddings, a monotone function of cosine distance).

CPU path: the min-distance of a candidate only ever decreases, so a stale value is an
upper bound. Candidates sit in a max-heap of stale values; a pick refreshes the top
block against the centers added since each was last seen (one BLAS-3 product) until the
best refreshed value beats every stale bound (lazy greedy, Minoux 1978). The picks are
exactly those of plain k-center greedy, at a fraction of its N·k·d cost on real data.
GPU path (torch, ``detectors/kcenter_torch.py``): plain greedy, one matrix-vector
product per pick over all candidates, which stay on the device (pass a CUDA tensor and
nothing is copied to it), optionally with half-precision products.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.blas import single_thread_blas
from detectors.drift._validation import as_embedding_matrix, check_same_dim, resolve_backend

_CAND_CHUNK, _ANCHOR_CHUNK = 2048, 8192  # 64 MiB of float32 distances per block


@dataclass(frozen=True, slots=True)
class Selection:
    """Candidates chosen for labeling.

    Attributes
    ----------
    indices : ndarray of int64
        Rows of ``candidates``, in pick order.
    novelty : ndarray of float64
        Distance of each pick to the nearest reference, labeled or earlier pick.
    coverage_radius : float
        Largest distance from any candidate to its nearest anchor or pick afterwards.
    """

    indices: np.ndarray
    novelty: np.ndarray
    coverage_radius: float


def _row_sq_norms(x: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, x)


def min_sq_distances(x: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """min_j |x_i − a_j|² for every row of ``x``, in memory-bounded BLAS blocks.

    Uses |x|² + |a|² − 2x·a: the block's min over anchors of (|a|² − 2x·a) plus |x|².
    """
    out = np.empty(len(x), dtype=np.float32)
    a_sq = _row_sq_norms(anchors)
    x_sq = _row_sq_norms(x)
    buf = np.empty((_CAND_CHUNK, min(_ANCHOR_CHUNK, len(anchors))), dtype=np.float32)
    for i in range(0, len(x), _CAND_CHUNK):
        xc = x[i : i + _CAND_CHUNK]
        best = np.full(len(xc), np.inf, dtype=np.float32)
        for j in range(0, len(anchors), _ANCHOR_CHUNK):
            ac = anchors[j : j + _ANCHOR_CHUNK]
            block = buf[: len(xc), : len(ac)]
            np.matmul(xc, ac.T, out=block)
            block *= -2.0
            block += a_sq[j : j + len(ac)]
            np.minimum(best, block.min(axis=1), out=best)
        out[i : i + len(xc)] = best + x_sq[i : i + len(xc)]
    return np.maximum(out, 0.0, out=out)


def _kcenter_numpy(
    x: np.ndarray, budget: int, min_d2: np.ndarray, weight2: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Lazy k-center greedy; returns picks, squared novelty and squared coverage radius."""
    with single_thread_blas():
        return _lazy_greedy(x, budget, min_d2, weight2)


def _lazy_greedy(
    x: np.ndarray, budget: int, min_d2: np.ndarray, weight2: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, float]:
    n = len(x)
    x_sq = _row_sq_norms(x)
    centers = np.empty((budget, x.shape[1]), dtype=np.float32)
    centers_sq = np.empty(budget, dtype=np.float32)
    seen = np.zeros(n, dtype=np.int64)  # how many picks each min_d2[i] accounts for
    score = min_d2 if weight2 is None else min_d2 * weight2
    heap = list(zip((-score).tolist(), range(n), strict=True))  # (−stale score, index)
    heapq.heapify(heap)
    picks, novelty = np.empty(budget, dtype=np.int64), np.empty(budget, dtype=np.float64)

    def refresh(idx: np.ndarray, k: int) -> None:
        start = int(seen[idx].min())
        if start < k:  # re-checking already-seen centers is harmless (min is idempotent)
            d2 = x[idx] @ centers[start:k].T
            d2 *= -2.0
            d2 += centers_sq[start:k]
            d2 += x_sq[idx, None]
            min_d2[idx] = np.maximum(np.minimum(min_d2[idx], d2.min(axis=1)), 0.0)
            seen[idx] = k

    for k in range(budget):
        block = 16
        while True:
            popped = [heapq.heappop(heap) for _ in range(min(block, len(heap)))]
            idx = np.fromiter((i for _, i in popped), dtype=np.int64, count=len(popped))
            refresh(idx, k)
            fresh = min_d2[idx] if weight2 is None else min_d2[idx] * weight2[idx]
            keys = sorted(zip((-fresh).tolist(), idx.tolist(), strict=True))
            if not heap or keys[0] <= heap[0]:  # exact best beats every stale upper bound
                break
            for key in keys:
                heapq.heappush(heap, key)
            block = min(4 * block, 65536)
        for key in keys[1:]:
            heapq.heappush(heap, key)
        j = keys[0][1]
        picks[k], novelty[k] = j, float(min_d2[j])
        centers[k], centers_sq[k] = x[j], x_sq[j]
        min_d2[j], seen[j] = 0.0, k + 1
    # Coverage radius: the same lazy trick on unweighted values, largest stale first.
    order = np.argsort(-min_d2, kind="stable")
    radius2 = 0.0
    for s in range(0, n, 4096):
        idx = order[s : s + 4096]
        if min_d2[idx[0]] <= radius2:
            break
        refresh(idx, budget)
        radius2 = max(radius2, float(min_d2[idx].max()))
    return picks, novelty, radius2


def select_for_active_learning(
    candidates: Any,
    budget: int,
    reference: Any | None = None,
    labeled: Any | None = None,
    priority: Any | None = None,
    backend: str = "auto",
    precision: str = "float32",
) -> Selection:
    """Pick ``budget`` candidates to label by k-center greedy.

    Parameters
    ----------
    candidates : array_like, shape (n, d)
        Unlabeled embeddings to choose from.
    budget : int
        Number of picks, 0 <= budget <= n.
    reference, labeled : array_like, shape (·, d), optional
        Points already covered (reference window, already-labeled items). With neither,
        the candidates' own mean stands in as the one anchor, so the first pick is the
        most atypical candidate.
    priority : array_like, shape (n,), optional
        Non-negative weights that multiply each candidate's distance when picking (e.g.
        2.0 for samples from windows where a detector fired). Novelty and radius stay
        unweighted.
    backend : {"auto", "numpy", "torch"}
        "auto" uses torch when CUDA is available. Both are deterministic (ties go to the
        lowest index) and give the same picks up to float32 near-ties. Candidates given
        as a torch tensor always take the torch path, on the tensor's device, uncopied.
    precision : {"float32", "float16"}
        Dtype of the distance products on the torch path. "float16" halves the bytes a
        pick reads (the time on a GPU) and moves distances by about 1e-3 for unit-norm
        embeddings; norms and minima stay float32. The numpy path is always float32.

    Returns
    -------
    Selection

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> blobs = rng.normal(size=(4, 16)) * 10
    >>> pool = np.repeat(blobs, 50, axis=0) + rng.normal(size=(200, 16)) * 0.1
    >>> sel = select_for_active_learning(pool, budget=4, backend="numpy")
    >>> sorted(int(i) // 50 for i in sel.indices)  # one pick per blob
    [0, 1, 2, 3]
    >>> bool(sel.coverage_radius < 1.0)
    True
    """
    if precision not in ("float32", "float16"):
        raise ValueError(f"precision must be 'float32' or 'float16'; got {precision!r}")
    if isinstance(budget, bool) or int(budget) != budget or budget < 0:
        raise ValueError(f"budget must be a non-negative integer; got {budget!r}")
    budget = int(budget)
    if _is_torch_tensor(candidates):
        if resolve_backend(backend) == "numpy" and backend == "numpy":
            raise ValueError("candidates is a torch tensor; use backend='torch' or 'auto'")
        from detectors.kcenter_torch import select_resident

        picks_t, novelty2_t, radius2_t = select_resident(
            candidates, budget, reference, labeled, priority, precision=precision
        )
        return Selection(
            indices=picks_t.cpu().numpy(),
            novelty=np.sqrt(novelty2_t.double().cpu().numpy()),
            coverage_radius=float(radius2_t) ** 0.5,
        )
    x = as_embedding_matrix(candidates, "candidates")
    if budget > len(x):
        raise ValueError(f"budget {budget} exceeds the candidate pool of {len(x)}")
    anchor_sets = [
        as_embedding_matrix(a, name)
        for a, name in ((reference, "reference"), (labeled, "labeled"))
        if a is not None
    ]
    for a, name in zip(anchor_sets, ("reference", "labeled"), strict=False):
        check_same_dim(x, a, "candidates", name)
    if not anchor_sets:
        anchor_sets = [x.mean(axis=0, dtype=np.float64).astype(np.float32)[None, :]]
    weight2 = None
    if priority is not None:
        w = np.asarray(priority, dtype=np.float64)
        if w.shape != (len(x),) or not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("priority must be finite, non-negative and of shape (n_candidates,)")
        weight2 = (w * w).astype(np.float32)
    if resolve_backend(backend) == "torch":
        from detectors.kcenter_torch import kcenter_numpy_inputs

        picks, novelty2, radius2 = kcenter_numpy_inputs(
            x, budget, anchor_sets, weight2, precision=precision
        )
    else:
        min_d2 = np.minimum.reduce([min_sq_distances(x, a) for a in anchor_sets])
        picks, novelty2, radius2 = _kcenter_numpy(x, budget, min_d2, weight2)
    return Selection(
        indices=picks, novelty=np.sqrt(novelty2), coverage_radius=float(np.sqrt(radius2))
    )


def _is_torch_tensor(value: object) -> bool:
    # Checked by type name so that the numpy path never imports torch.
    return type(value).__module__.startswith("torch") and hasattr(value, "device")
