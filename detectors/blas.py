"""How many threads BLAS may use around loops of many small matrix products.

Multithreaded OpenBLAS spends 10-100x the cost of a small (block x k) product
synchronising its threads on a busy machine, so the k-center pick loop and the chunked
cosine pass run single-threaded; threadpoolctl is optional (no limit without it).
"""

from __future__ import annotations

import contextlib
from typing import Any


def single_thread_blas() -> contextlib.AbstractContextManager[Any]:
    """A context in which BLAS runs on one thread (a no-op without threadpoolctl).

    >>> import numpy as np
    >>> with single_thread_blas():
    ...     float(np.ones((2, 2)) @ np.ones(2) @ np.ones(2))
    4.0
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
