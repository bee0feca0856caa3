"""k-center greedy on a torch device: the candidate matrix stays resident, picks never sync.

Imported only on the torch path, so the numpy path needs no torch. Each pick is one
matrix-vector product X·c over all candidates (memory-bound: with 1M × 512 candidates it
reads the whole matrix once), then an elementwise min into the running min-distance
vector. Everything a pick needs (argmax, the chosen row, the update) is a device kernel:
the loop queues ``budget`` rounds of kernels and the host waits once, at the end, for the
indices, novelties and radius.

Half precision (``distance_dtype=torch.float16``) keeps a float16 copy of the candidates for
the per-pick product, which halves the bytes each pick reads, which is what the time is
made of. Products accumulate and come out in float32 (cuBLAS ``out_dtype``); norms, the
|x|² + |c|² − 2x·c sum and the running minima are float32. The minima are then off by the
input rounding (~1e-4 on a squared distance between unit vectors), so each pick re-scores
the 16 best approximate candidates exactly, in float32 from the candidates as given,
against the anchors and every pick so far (16 × k × d flops): picks, novelties and the
radius are those of float32. Candidates passed as float16 are used as they are (1 GB for
1M × 512 instead of 3), and the results are exact for those rounded rows. On CPU, which
has no fast float16 product, the rows are widened to float32 per product.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

_ROW_CHUNK, _ANCHOR_CHUNK = 8192, 32768
_REFINE = 16  # approximate best candidates re-scored exactly per float16 pick


def sq_norms(x: torch.Tensor) -> torch.Tensor:
    """Float32 squared row norms of ``x`` (any float dtype), in row chunks to bound memory."""
    out = torch.empty(len(x), dtype=torch.float32, device=x.device)
    for i in range(0, len(x), _ROW_CHUNK * 8):
        block = x[i : i + _ROW_CHUNK * 8].float()
        out[i : i + len(block)] = (block * block).sum(dim=1)
    return out


_MIXED_MM = {"ok": True}  # False once torch.mm(out_dtype=float32) proved unsupported here


def products(x: torch.Tensor, y_t: torch.Tensor) -> torch.Tensor:
    """``x @ y_t`` in float32, reading ``x`` in its own dtype."""
    if x.dtype == torch.float32:
        return x @ y_t
    if not x.is_cuda:
        return x.float() @ y_t.float()
    if _MIXED_MM["ok"]:
        try:
            return torch.mm(x, y_t.to(x.dtype), out_dtype=torch.float32)
        except (RuntimeError, TypeError):  # an older torch or GPU: half output instead
            _MIXED_MM["ok"] = False
    return (x @ y_t.to(x.dtype)).float()


def min_sq_distances_to(
    x: torch.Tensor, x_sq: torch.Tensor, anchors: torch.Tensor, out: torch.Tensor
) -> None:
    """``out = min(out, min_j |x_i − a_j|²)``, blockwise; products in ``x.dtype``."""
    a = anchors.to(x.dtype)
    a_sq = sq_norms(a)
    for i in range(0, len(x), _ROW_CHUNK):
        xc = x[i : i + _ROW_CHUNK]
        best = torch.full((len(xc),), float("inf"), device=x.device)
        for j in range(0, len(a), _ANCHOR_CHUNK):
            dots = products(xc, a[j : j + _ANCHOR_CHUNK].T)
            block = torch.add(a_sq[j : j + _ANCHOR_CHUNK], dots, alpha=-2.0)
            best = torch.minimum(best, block.min(dim=1).values)
        torch.minimum(out[i : i + len(xc)], best + x_sq[i : i + len(xc)], out=out[i : i + len(xc)])


def kcenter_resident(
    x: torch.Tensor,
    budget: int,
    anchor_sets: list[torch.Tensor],
    weight2: torch.Tensor | None,
    *,
    distance_dtype: torch.dtype = torch.float32,
    refine: int = _REFINE,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Plain k-center greedy on ``x.device``; returns device tensors (picks, novelty², radius²).

    ``x`` is used in place when it already has ``distance_dtype`` (no copy of a 1 GB
    matrix); otherwise it is converted once. Ties go to the lowest index, as on the numpy
    path. With float16 the running minima are approximate; each pick takes the ``refine``
    best approximate candidates and re-scores them exactly (float32, from ``x`` as given,
    against the anchors and every pick so far), so the picks and novelties are those of
    float32 unless more than ``refine`` candidates sit within ~1e-4 of the best.
    """
    device = x.device
    half = distance_dtype != torch.float32
    with torch.inference_mode():
        x = x.contiguous()
        xd = x if x.dtype == distance_dtype else x.to(distance_dtype)
        x_sq = sq_norms(xd)  # of the rows the products read, so a pick's self-distance is ~0
        exact_sq = sq_norms(x) if half and xd is not x else x_sq
        anchor_d2 = torch.full((len(x),), float("inf"), device=device)
        for anchors in anchor_sets:
            min_sq_distances_to(x if half else xd, exact_sq, anchors.to(device), anchor_d2)
        anchor_d2.clamp_(min=0.0)
        min_d2 = anchor_d2.clone()
        w2 = None if weight2 is None else weight2.to(device, torch.float32)
        picks = torch.empty(budget, dtype=torch.int64, device=device)
        novelty2 = torch.empty(budget, dtype=torch.float32, device=device)
        centers = torch.empty((budget if half else 0, x.shape[1]), device=device)
        d2 = torch.empty_like(min_d2)
        m = min(refine, len(x))

        def exact_d2(rows: torch.Tensor, k: int) -> torch.Tensor:
            """float32 min squared distance of ``rows`` to the anchors and the first k picks."""
            out = anchor_d2.index_select(0, rows)
            if k:
                r = x.index_select(0, rows).float()
                d2c = torch.addmm(exact_sq.index_select(0, picks[:k]), r, centers[:k].T, alpha=-2.0)
                d2c += exact_sq.index_select(0, rows)[:, None]
                out = torch.minimum(out, d2c.clamp_(min=0.0).min(dim=1).values)
            # Rows already picked hold an exact 0 in min_d2; keep it (rounding gives ~1e-7).
            return torch.where(min_d2.index_select(0, rows) == 0.0, 0.0, out)

        for k in range(budget):
            score = min_d2 if w2 is None else min_d2 * w2
            if half:
                top = torch.topk(score, m, sorted=False).indices
                exact = exact_d2(top, k)
                exact_score = exact if w2 is None else exact * w2.index_select(0, top)
                # Lowest index among the exact maxima, as the float32 path's argmax gives.
                ties = torch.where(exact_score == exact_score.max(), top, len(x))
                pick = ties.min().reshape(1)
                novelty2[k : k + 1] = exact_d2(pick, k)
                centers[k : k + 1] = x.index_select(0, pick).float()
            else:
                # keepdim keeps `pick` a 1-element device tensor: indexing with it never
                # synchronises with the host (a 0-d index would call .item()).
                pick = torch.argmax(score, dim=0, keepdim=True)
                novelty2[k : k + 1] = min_d2.index_select(0, pick)
            picks[k : k + 1] = pick
            dots = products(xd, xd.index_select(0, pick).T).squeeze(1)
            torch.add(x_sq, dots, alpha=-2.0, out=d2)
            d2.add_(x_sq.index_select(0, pick)).clamp_(min=0.0)
            torch.minimum(min_d2, d2, out=min_d2)
            min_d2.index_fill_(0, pick, 0.0)
        if not len(x):
            return picks, novelty2, torch.zeros((), device=device)
        if half:
            radius2 = exact_d2(torch.topk(min_d2, m, sorted=False).indices, budget).max()
        else:
            radius2 = min_d2.max()
        return picks, novelty2, radius2


_DTYPES = {"float32": torch.float32, "float16": torch.float16}
_PRIORITY_MESSAGE = "priority must be finite, non-negative and of shape (n_candidates,)"


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def kcenter_numpy_inputs(
    x: np.ndarray,
    budget: int,
    anchor_sets: list[np.ndarray],
    weight2: np.ndarray | None,
    *,
    precision: str = "float32",
    device: torch.device | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Checked numpy inputs in, numpy out: copies ``x`` to the device once, then as above."""
    device = device or default_device()
    picks, novelty2, radius2 = kcenter_resident(
        torch.from_numpy(x).to(device),  # float32 kept for the exact re-scoring
        budget,
        [torch.from_numpy(a) for a in anchor_sets],
        None if weight2 is None else torch.from_numpy(weight2),
        distance_dtype=_DTYPES[precision],
    )
    return picks.cpu().numpy(), novelty2.double().cpu().numpy(), float(radius2)


def select_resident(
    candidates: torch.Tensor,
    budget: int,
    reference: Any | None,
    labeled: Any | None,
    priority: Any | None,
    *,
    precision: str = "float32",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Check device-resident candidates (and anchors as tensors or arrays), then select.

    The checks cost one host sync in all (shape and finiteness), not one per pick.
    """
    if candidates.ndim != 2 or candidates.shape[0] < 1 or candidates.shape[1] == 0:
        raise ValueError(
            f"candidates must be a 2-D tensor (n, d) with n, d >= 1; got {tuple(candidates.shape)}"
        )
    if not candidates.is_floating_point():
        raise ValueError(f"candidates must be a float tensor; got {candidates.dtype}")
    if budget > len(candidates):
        raise ValueError(f"budget {budget} exceeds the candidate pool of {len(candidates)}")
    device, d = candidates.device, candidates.shape[1]
    checks = {"candidates": torch.isfinite(candidates).all()}
    anchor_sets = []
    for value, name in ((reference, "reference"), (labeled, "labeled")):
        if value is None:
            continue
        a = torch.as_tensor(value, device=device).float()
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] != d:
            raise ValueError(f"{name} must be a 2-D (m, {d}) array; got {tuple(a.shape)}")
        anchor_sets.append(a)
        checks[name] = torch.isfinite(a).all()
    if not anchor_sets:
        anchor_sets = [candidates.mean(dim=0, keepdim=True, dtype=torch.float64).float()]
    weight2 = None
    if priority is not None:
        w = torch.as_tensor(priority, device=device).float()
        if w.shape != (len(candidates),):
            raise ValueError(_PRIORITY_MESSAGE)
        weight2 = w * w
        checks["priority"] = torch.isfinite(w).all() & (w >= 0).all()
    flags = torch.stack(list(checks.values())).cpu().tolist()  # the one host sync
    for name, ok in zip(checks, flags, strict=True):
        if not ok:
            if name == "priority":
                raise ValueError(_PRIORITY_MESSAGE)
            raise ValueError(f"{name} contains NaN or infinite values")
    return kcenter_resident(
        candidates, budget, anchor_sets, weight2, distance_dtype=_DTYPES[precision]
    )
