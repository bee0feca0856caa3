"""What every device JPEG decoder returns, and the resize they share.

Its own module so that the backends (:mod:`pipelines.embedding.dali_decode`,
:mod:`pipelines.embedding.nvimgcodec_decode`, torchvision's in
:mod:`pipelines.embedding.device_decoders`) and the chooser that builds them import the
same types without importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from pipelines.embedding.gpu_decode import BytesLike, PixelSpec, normalize, resize_center_crop
from pipelines.embedding.image_probe import ImageProbe
from pipelines.embedding.matrix_resize import matrix_resize_center_crop


@dataclass
class DevicePixels:
    """What a device decoder made of one batch: pixels for some inputs, refusals for others."""

    pixels: torch.Tensor | None  # (len(positions), 3, S, S) normalised float32
    positions: list[int]  # input position of each pixel row
    refused: dict[int, str] = field(default_factory=dict)  # position -> reason (PIL retries)


class DeviceDecoder(Protocol):
    """Batched decode + resize + normalise; called from several prepare threads at once."""

    name: str

    def decode_resize(
        self, datas: Sequence[BytesLike], probes: Sequence[ImageProbe]
    ) -> DevicePixels: ...


def resize_decoded(
    decoded: Sequence[torch.Tensor | str | None],
    spec: PixelSpec,
    scale: torch.Tensor,
    shift: torch.Tensor,
) -> DevicePixels:
    """Resize, crop and normalise ``(3, H, W)`` uint8 images; a str or None entry is refused."""
    images = [(p, d) for p, d in enumerate(decoded) if isinstance(d, torch.Tensor)]
    refused = {
        p: d if isinstance(d, str) else "the device decoder could not decode it"
        for p, d in enumerate(decoded)
        if not isinstance(d, torch.Tensor)
    }
    if not images:
        return DevicePixels(None, [], refused)
    tensors = [d for _, d in images]
    if tensors[0].device.type == "cuda":
        # One pair of batched products for the whole batch; the grouped interpolate costs
        # launches per distinct size and bounds the device path (see matrix_resize.py).
        pixels = matrix_resize_center_crop(tensors, spec)
        positions = [position for position, _ in images]
    else:
        pixels, order = resize_center_crop(tensors, spec)
        positions = [images[k][0] for k in order]
    return DevicePixels(normalize(pixels, scale, shift), positions, refused)
