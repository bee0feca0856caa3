"""The image tower captured once as a CUDA graph, replayed for every batch.

An eager ViT forward is a few hundred kernel launches, each a Python call that gives up and
retakes the GIL. The prepare threads need the GIL for header parsing at the same time, and
a thread that wants it back may wait a whole switch interval (5 ms), so the model thread
falls behind and the GPU idles between kernels. A replayed graph is one call per batch.

Batches shorter than the captured size are padded into the static input; the extra rows
cost GPU time only on a run's last batch. Capture runs under autocast with its weight cache
off, as CUDA graphs require.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

Encode = Callable[[torch.Tensor], torch.Tensor]
_WARMUP_CALLS = 3


class GraphedImageEncoder:
    """``encode(pixels)`` -> unit vectors, by replaying one captured forward pass."""

    def __init__(
        self,
        encode_image: Encode,
        *,
        batch_size: int,
        image_size: int,
        pixel_dtype: torch.dtype,
        autocast_dtype: torch.dtype | None,
        device: torch.device,
    ) -> None:
        self.batch_size = batch_size
        self._static_in = torch.zeros(
            (batch_size, 3, image_size, image_size), dtype=pixel_dtype, device=device
        ).contiguous(memory_format=torch.channels_last)

        def forward() -> torch.Tensor:
            with _autocast(autocast_dtype):
                features = encode_image(self._static_in)
            return F.normalize(features.float(), dim=-1)

        # Warm up on a side stream (cuBLAS and attention pick their kernels), then capture.
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.inference_mode(), torch.cuda.stream(side):
            for _ in range(_WARMUP_CALLS):
                forward()
        torch.cuda.current_stream(device).wait_stream(side)
        self._graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), torch.cuda.graph(self._graph):
            self._static_out = forward()
        torch.cuda.synchronize(device)

    def __call__(self, pixels: torch.Tensor) -> torch.Tensor:
        """Unit vectors for ``pixels`` (at most ``batch_size`` rows), valid until the next call
        is queued: copy them out on the same stream before calling again."""
        rows = int(pixels.shape[0])
        if rows > self.batch_size:
            raise ValueError(f"batch of {rows} rows is over the captured {self.batch_size}")
        self._static_in[:rows].copy_(pixels)
        self._graph.replay()
        return self._static_out[:rows]


def try_graphed_encoder(
    encode_image: Encode,
    *,
    batch_size: int,
    image_size: int,
    pixel_dtype: torch.dtype,
    autocast_dtype: torch.dtype | None,
    device: torch.device,
) -> GraphedImageEncoder | None:
    """A graphed encoder, or None (logged) when this model or driver cannot be captured."""
    try:
        return GraphedImageEncoder(
            encode_image,
            batch_size=batch_size,
            image_size=image_size,
            pixel_dtype=pixel_dtype,
            autocast_dtype=autocast_dtype,
            device=device,
        )
    except RuntimeError as exc:
        log.warning("CUDA graph capture of the image tower failed, running eagerly: %s", exc)
        torch.cuda.synchronize(device)
        return None


def _autocast(dtype: torch.dtype | None) -> contextlib.AbstractContextManager[object]:
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cuda", dtype=dtype, cache_enabled=False)
