"""Input checks shared by the drift tests and the active-learning selector."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np


def as_embedding_matrix(
    x: Any, name: str, *, min_rows: int = 1, check_finite: bool = True
) -> np.ndarray:
    """Return ``x`` as a C-contiguous float32 ``(n, d)`` matrix or raise ``ValueError``.

    ``check_finite=False`` skips the full pass over the data; callers that compute
    row norms anyway check those instead (a NaN or inf anywhere in a row makes its
    norm non-finite), which is what keeps the 1,000,000-row paths at one pass.
    """
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, d); got shape {arr.shape}")
    if arr.shape[0] < min_rows or arr.shape[1] == 0:
        raise ValueError(
            f"{name} must have at least {min_rows} row(s) and 1 column; got shape {arr.shape}"
        )
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be numeric; got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if check_finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_same_dim(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    """Raise ``ValueError`` unless ``a`` and ``b`` have the same number of columns."""
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"{name_a} and {name_b} must have the same dimension; got {a.shape[1]} and {b.shape[1]}"
        )


def check_probability(value: float, name: str) -> float:
    """Return ``value`` as a float if it lies strictly between 0 and 1."""
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1; got {value}")
    return value


def resolve_backend(backend: str) -> str:
    """Map "auto" to "torch" when CUDA is available, else "numpy"; check the name.

    Importing torch only to learn there is no GPU costs a process ~380 MB of RSS (seen in
    the scheduler: 816 -> 1,196 MB at its first FM-6 run), so without NVIDIA's device node
    and with torch not yet imported, the answer is numpy without the import.
    """
    if backend not in ("auto", "numpy", "torch"):
        raise ValueError(f"backend must be 'auto', 'numpy' or 'torch'; got {backend!r}")
    if backend != "auto":
        return backend
    if "torch" not in sys.modules and not os.path.exists("/dev/nvidiactl"):
        return "numpy"
    try:
        import torch
    except ImportError:
        return "numpy"
    return "torch" if torch.cuda.is_available() else "numpy"
