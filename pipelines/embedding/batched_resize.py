"""Resize and centre-crop many differently sized images with a few batched matmuls.

open_clip's eval preprocess resizes the shortest side to ``S`` with antialiased bicubic and
crops the centre ``S x S``. Both steps are linear and separable, so for image ``i`` the
crop is ``Wy_i @ X_i @ Wx_i^T``, where ``Wy_i`` (``S x H``) and ``Wx_i`` (``S x W``) hold
the resampling weights of the cropped output rows and columns. Padding every image of a
chunk to the chunk's largest height and width (weights are zero past each image's edge)
turns the whole chunk into two batched matmuls.

Why not ``F.interpolate`` per image: photos come in almost as many sizes as there are
photos, so a batch of 1,024 costs some 5,000 small kernel launches, each one a Python call
that drops and retakes the GIL while the model thread needs it too. On an H200 that loop,
not the model nor nvJPEG, bounded end-to-end throughput. Here a chunk costs about twenty
calls whatever its sizes.

The weights are torch's own antialiased kernel (PIL's, bicubic a = -0.5): for output pixel
``o``, centre ``c = scale * (o + 0.5)``, support ``2 * max(scale, 1)``, window
``[floor(c - support + 0.5), floor(c + support + 0.5))`` clipped to the image, weights
``filter((j - c + 0.5) / max(scale, 1))`` normalised over the window.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

import torch

from pipelines.embedding.gpu_decode import PixelSpec

log = logging.getLogger(__name__)

# Padded input elements (images x 3 x Hmax x Wmax) per chunk: 2**27 floats is 512 MiB.
DEFAULT_CHUNK_ELEMENTS = 1 << 27

_SUPPORT = {"bicubic": 2.0, "bilinear": 1.0}
_BICUBIC_A = -0.5


def _spend_nested_prototype_warning() -> None:
    # Strided nested tensors warn once per process that they are a prototype. Spend that
    # warning here, at import, where catch_warnings is safe (it is not in prepare threads).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nested.as_nested_tensor([torch.zeros(1, 1, 1), torch.zeros(1, 1, 2)])


_spend_nested_prototype_warning()


def shortest_side_size(height: int, width: int, size: int) -> tuple[int, int]:
    """Output (height, width) of torchvision ``Resize(size)`` for a scalar size."""
    if width <= height:
        return int(size * height / width), size
    return size, int(size * width / height)


def resize_center_crop(
    images: Sequence[torch.Tensor],
    spec: PixelSpec,
    *,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
) -> tuple[torch.Tensor, list[int]]:
    """Resize and crop uint8 ``(3, H, W)`` images to ``(n, 3, S, S)`` float32 in [0, 255].

    Rows come out ordered by image area (so chunks pad little); the returned list gives each
    row's input position. Values are rounded and clamped to the uint8 grid as PIL does.
    """
    if not images:
        raise ValueError("resize_center_crop needs at least one image")
    sizes = [(int(image.shape[-2]), int(image.shape[-1])) for image in images]
    order = sorted(range(len(images)), key=lambda p: sizes[p][0] * sizes[p][1])
    crops = [
        _resize_chunk([images[p] for p in chunk], [sizes[p] for p in chunk], spec)
        for chunk in _chunks(order, sizes, chunk_elements)
    ]
    out = crops[0] if len(crops) == 1 else torch.cat(crops)
    return out.clamp_(0.0, 255.0).round_(), order


def _chunks(order: list[int], sizes: list[tuple[int, int]], chunk_elements: int) -> list[list[int]]:
    """Consecutive runs of ``order`` whose padded size stays within ``chunk_elements``."""
    chunks: list[list[int]] = []
    current: list[int] = []
    max_h = max_w = 0
    for position in order:
        height, width = sizes[position]
        grown_h, grown_w = max(max_h, height), max(max_w, width)
        if current and (len(current) + 1) * 3 * grown_h * grown_w > chunk_elements:
            chunks.append(current)
            current, grown_h, grown_w = [], height, width
        current.append(position)
        max_h, max_w = grown_h, grown_w
    chunks.append(current)
    return chunks


def _resize_chunk(
    images: list[torch.Tensor], sizes: list[tuple[int, int]], spec: PixelSpec
) -> torch.Tensor:
    device = images[0].device
    size = spec.size
    geometry = []  # per image: height, width, resized height, resized width, top, left
    for height, width in sizes:
        new_height, new_width = shortest_side_size(height, width, size)
        top = int(round((new_height - size) / 2.0))
        left = int(round((new_width - size) / 2.0))
        geometry.append((height, width, new_height, new_width, top, left))
    padded = pad_images(images)  # (k, 3, Hmax, Wmax) uint8
    g = torch.tensor(geometry, dtype=torch.float32).to(device, non_blocking=True)
    rows = resample_weights(g[:, 0], g[:, 2], g[:, 4], size, padded.shape[-2], spec.interpolation)
    cols = resample_weights(g[:, 1], g[:, 3], g[:, 5], size, padded.shape[-1], spec.interpolation)
    pixels = padded.float()
    # (k,1,S,H) @ (k,3,H,W) -> (k,3,S,W); then @ (k,1,W,S) -> (k,3,S,S).
    return torch.matmul(torch.matmul(rows.unsqueeze(1), pixels), cols.unsqueeze(1).mT)


def pad_images(images: list[torch.Tensor]) -> torch.Tensor:
    """Stack ``(3, H, W)`` images into ``(k, 3, Hmax, Wmax)``, zeros past each image's edge."""
    if len({tuple(image.shape) for image in images}) == 1:
        return torch.stack(images)
    try:
        # Two calls for the whole chunk; a Python loop would be one call per image.
        return torch.nested.as_nested_tensor(images).to_padded_tensor(0)
    except (RuntimeError, NotImplementedError) as exc:  # prototype API: keep a way round it
        log.warning("nested-tensor padding failed (%s); padding image by image", exc)
        height = max(int(image.shape[-2]) for image in images)
        width = max(int(image.shape[-1]) for image in images)
        out = images[0].new_zeros((len(images), 3, height, width))
        for index, image in enumerate(images):
            out[index, :, : image.shape[-2], : image.shape[-1]] = image
        return out


def resample_weights(
    in_len: torch.Tensor,
    out_len: torch.Tensor,
    start: torch.Tensor,
    crop: int,
    padded: int,
    interpolation: str,
) -> torch.Tensor:
    """``(k, crop, padded)`` weights taking ``in_len`` samples to ``out_len``, keeping ``crop``.

    Row ``o`` of image ``i`` is output sample ``start[i] + o`` of the resized axis; columns
    at or past ``in_len[i]`` are zero.
    """
    device = in_len.device
    scale = (in_len / out_len).unsqueeze(1)  # (k, 1)
    widen = scale.clamp(min=1.0)
    support = _SUPPORT[interpolation] * widen
    center = scale * (start.unsqueeze(1) + torch.arange(crop, device=device) + 0.5)  # (k, crop)
    low = torch.floor(center - support + 0.5).clamp_(min=0).unsqueeze(2)
    high = torch.minimum(torch.floor(center + support + 0.5), in_len.unsqueeze(1)).unsqueeze(2)
    source = torch.arange(padded, device=device, dtype=torch.float32)  # (padded,)
    x = (source - center.unsqueeze(2) + 0.5) / widen.unsqueeze(2)  # (k, crop, padded)
    weights = _bicubic(x) if interpolation == "bicubic" else (1.0 - x.abs()).clamp_(min=0.0)
    weights = weights * ((source >= low) & (source < high))
    total = weights.sum(dim=2, keepdim=True)
    return weights / torch.where(total == 0, torch.ones_like(total), total)


def _bicubic(x: torch.Tensor) -> torch.Tensor:
    a = _BICUBIC_A
    x = x.abs()
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return torch.where(x < 1.0, near, torch.where(x < 2.0, far, torch.zeros_like(x)))
