"""torch implementation of the MMD kernel sums (CUDA when present, else CPU).

Same math and the same float32/float64 split as the numpy path in ``mmd.py``, so the
two agree within float32 rounding; randomness (pairs, permutations) comes from numpy.
"""

from __future__ import annotations

import numpy as np
import torch


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def kernel_sums_torch(
    pooled: np.ndarray,
    indicators: np.ndarray,
    pair_i: np.ndarray,
    pair_j: np.ndarray,
    device: torch.device | None = None,
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Return aᵀKa and aᵀr per indicator row, T = 1ᵀK1 and σ² (see ``mmd.py``)."""
    device = device or default_device()
    with torch.no_grad():
        z = torch.from_numpy(pooled).to(device)
        sq = (z * z).sum(dim=1)
        k = z @ z.T
        k.mul_(-2.0).add_(sq[:, None]).add_(sq[None, :]).clamp_(min=0.0)
        k.fill_diagonal_(0.0)
        idx_i = torch.from_numpy(pair_i).to(device)
        idx_j = torch.from_numpy(pair_j).to(device)
        sigma2 = float(np.median(k[idx_i, idx_j].cpu().numpy()))
        if sigma2 <= 0.0:
            sigma2 = float(k.max()) or 1.0
        k.mul_(-0.5 / sigma2).exp_()
        row_sums = k.sum(dim=1, dtype=torch.float64)
        a = torch.from_numpy(indicators).to(device)
        k_a = (k @ a.T).double()
        a_k_a = (k_a * a.T.double()).sum(dim=0)
        a_r = a.double() @ row_sums
        return (
            a_k_a.cpu().numpy(),
            a_r.cpu().numpy(),
            float(row_sums.sum()),
            sigma2,
        )
