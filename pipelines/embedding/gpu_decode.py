"""Batched JPEG decode, resize, crop and normalise on a torch device (CUDA in production).

``torchvision.io.decode_jpeg`` takes a list and, on CUDA, hands baseline JPEGs to nvJPEG's
batched (hardware on A100/H100-class GPUs) decoder. The resize mirrors open_clip's eval
preprocess: shortest side to ``size`` with antialiased bicubic (the same a = -0.5 kernel as
PIL), centre crop, round and clamp to the uint8 range as PIL does, then ``(x/255 - mean)/std``.
Images that share a height and width are resized in one call. The same code runs on CPU,
which is how the tests check it.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torchvision.io import ImageReadMode, decode_jpeg

BytesLike = bytes | bytearray | memoryview


def _spend_readonly_buffer_warning() -> None:
    # torch warns once per process when a tensor views a read-only buffer such as bytes.
    # Decoding only reads, so spend that one warning here, at import, where catch_warnings
    # is safe; it is not thread-safe later, in the prepare threads.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.frombuffer(b"\0", dtype=torch.uint8)


_spend_readonly_buffer_warning()


@dataclass(frozen=True, slots=True)
class PixelSpec:
    """Square input size, resampling and normalisation of a model's image tower."""

    size: int
    interpolation: str
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    @classmethod
    def from_preprocess_cfg(cls, cfg: Mapping[str, Any]) -> PixelSpec | None:
        """Read ``model.visual.preprocess_cfg``; None when the tensor path cannot mirror it."""
        size = cfg.get("size", 224)
        if isinstance(size, tuple | list):
            if len(size) != 2 or size[0] != size[1]:
                return None
            size = size[0]
        interpolation = cfg.get("interpolation") or "bicubic"
        if cfg.get("resize_mode", "shortest") != "shortest" or interpolation not in (
            "bicubic",
            "bilinear",
        ):
            return None
        mean = tuple(float(v) for v in cfg["mean"])
        std = tuple(float(v) for v in cfg["std"])
        if len(mean) != 3 or len(std) != 3:
            return None
        return cls(int(size), interpolation, mean, std)  # type: ignore[arg-type]


def decode_jpegs(datas: Sequence[BytesLike], device: torch.device) -> list[torch.Tensor | str]:
    """Decode JPEG streams to ``(3, H, W)`` uint8 tensors on ``device``.

    Returns one entry per input: the image, or the reason it could not be decoded.
    """
    if not datas:
        return []
    # Zero-copy views of the caller's buffers; the decoder only reads them.
    streams = [torch.frombuffer(data, dtype=torch.uint8) for data in datas]
    return _decode_or_bisect(streams, device)


def _decode_or_bisect(
    streams: list[torch.Tensor], device: torch.device
) -> list[torch.Tensor | str]:
    # One bad stream fails the whole batched call; halving finds it in O(log n) calls
    # instead of decoding every image of the batch on its own.
    try:
        return list(decode_jpeg(streams, mode=ImageReadMode.RGB, device=device))
    except RuntimeError as exc:
        if len(streams) == 1:
            detail = str(exc).strip().splitlines() or ["the decoder refused it"]
            return [f"corrupt JPEG: {detail[-1]}"]
    middle = len(streams) // 2
    return _decode_or_bisect(streams[:middle], device) + _decode_or_bisect(streams[middle:], device)


def shortest_side_size(height: int, width: int, size: int) -> tuple[int, int]:
    """Output (height, width) of torchvision ``Resize(size)`` for a scalar size."""
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


def resize_center_crop(
    images: Sequence[torch.Tensor], spec: PixelSpec
) -> tuple[torch.Tensor, list[int]]:
    """Resize and crop uint8 ``(3, H, W)`` images to ``(n, 3, S, S)`` float32 in [0, 255].

    Rows come out grouped by input size; the returned list gives each row's input position.
    """
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for position, image in enumerate(images):
        groups[(int(image.shape[-2]), int(image.shape[-1]))].append(position)
    size = spec.size
    crops: list[torch.Tensor] = []
    order: list[int] = []
    for (height, width), positions in groups.items():
        if len(positions) == 1:
            batch = images[positions[0]].unsqueeze(0)
        else:
            batch = torch.stack([images[p] for p in positions])
        pixels = batch.float()
        new_height, new_width = shortest_side_size(height, width, size)
        if (new_height, new_width) != (height, width):
            pixels = F.interpolate(
                pixels,
                size=(new_height, new_width),
                mode=spec.interpolation,
                antialias=True,
                align_corners=False,
            )
        top = int(round((new_height - size) / 2.0))
        left = int(round((new_width - size) / 2.0))
        crops.append(pixels[:, :, top : top + size, left : left + size])
        order.extend(positions)
    out = crops[0] if len(crops) == 1 else torch.cat(crops)
    # PIL rounds and clamps the resampled image to uint8; do the same so both paths agree.
    return out.clamp_(0.0, 255.0).round_(), order


def normalization_constants(
    spec: PixelSpec, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scale, shift)`` of shape ``(1, 3, 1, 1)`` with ``x * scale + shift == (x/255 - mean)/std``."""
    mean = torch.tensor(spec.mean, dtype=torch.float64)
    std = torch.tensor(spec.std, dtype=torch.float64)
    scale = (1.0 / (255.0 * std)).float().view(1, 3, 1, 1)
    shift = (-mean / std).float().view(1, 3, 1, 1)
    return scale.to(device), shift.to(device)


def normalize(pixels: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Normalise ``(n, 3, S, S)`` pixels in [0, 255] with one fused multiply-add."""
    return torch.addcmul(shift, pixels, scale)
