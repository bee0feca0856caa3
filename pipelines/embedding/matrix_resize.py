"""Resize and crop a batch of mixed-size images with two batched matrix products.

``resize_center_crop`` resizes images that share a size in one ``F.interpolate`` call,
so a batch of photos of many sizes costs several kernel launches and Python calls per
size: a batch of 1,024 JPEGs of 256-500 px holds ~1,000 sizes, and on an H200 the host's
launches, not the GPU, bounded decode + resize at ~9,600 img/s.

Antialiased resampling is separable and linear: the resized image is ``A_h @ X @ A_w.T``,
where row ``i`` of ``A_h`` holds the filter weights of output row ``i``. Keeping only the
rows and columns that survive the centre crop, padding every image to the batch's
largest height and width (zero weights over the padding) and stacking the matrices turns
the whole batch into two batched products, with the weights computed for all images at
once on the device. The weights are those of PIL's ``ImagingResample`` and torch's
antialiased ``interpolate`` (support scaled by the downscale factor, normalised to sum
to one; Keys' cubic with a = -0.5, or the triangle filter).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch

from pipelines.embedding.gpu_decode import PixelSpec

# Nested tensors pad a list of differently sized images in two kernels instead of one
# copy per image; torch calls that API a prototype and says so once per process.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors", category=UserWarning)

_CUBIC_A = -0.5


def _filter(x: torch.Tensor, interpolation: str) -> torch.Tensor:
    x = x.abs()
    if interpolation == "bilinear":
        return (1.0 - x).clamp_(min=0.0)
    a = _CUBIC_A
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return torch.where(x < 1.0, near, torch.where(x < 2.0, far, torch.zeros_like(x)))


def axis_weights(
    in_sizes: torch.Tensor, out_sizes: torch.Tensor, crop: int, width: int, interpolation: str
) -> torch.Tensor:
    """``(n, crop, width)`` weights: the centre ``crop`` outputs of resizing each of ``n``
    axes of length ``in_sizes[k]`` to ``out_sizes[k]``; columns past ``in_sizes[k]`` are 0.

    Computed in float64 as PIL does, returned as float32.
    """
    in_f = in_sizes.to(torch.float64).view(-1, 1, 1)
    out_f = out_sizes.to(torch.float64).view(-1, 1, 1)
    scale = in_f / out_f
    support_scale = scale.clamp(min=1.0)  # widen the filter only when shrinking
    start = torch.round((out_f - crop) / 2.0)
    outputs = start + torch.arange(crop, dtype=torch.float64, device=in_sizes.device).view(1, -1, 1)
    center = scale * (outputs + 0.5)
    inputs = torch.arange(width, dtype=torch.float64, device=in_sizes.device).view(1, 1, -1)
    weights = _filter((inputs - center + 0.5) / support_scale, interpolation)
    weights = weights * (inputs < in_f)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights.to(torch.float32)


def output_sizes(
    heights: torch.Tensor, widths: torch.Tensor, size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Resized (height, width) per image for torchvision ``Resize(size)``: shortest side to
    ``size``, the other side scaled and truncated (as ``shortest_side_size``)."""
    size_t = torch.full_like(heights, size)
    tall = widths <= heights
    # int(size * long / short), in float64 like the Python expression it mirrors
    long_h = (size * heights.to(torch.float64) / widths.to(torch.float64)).floor().to(heights.dtype)
    long_w = (size * widths.to(torch.float64) / heights.to(torch.float64)).floor().to(heights.dtype)
    return torch.where(tall, long_h, size_t), torch.where(tall, size_t, long_w)


PAD_ROUTES: dict[str, int] = {}  # how batches were padded, by route (the bench reports it)


def pad_images(images: Sequence[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    """``(n, 3, max H, max W)`` of ``dtype``, zeros past each image's height and width.

    Nested tensors pad in a few kernels; one copy per image is the fallback for a torch
    without the padding kernel for this dtype.
    """
    try:
        nested = torch.nested.as_nested_tensor(list(images))
        padded = nested.to(dtype).to_padded_tensor(0.0)
        PAD_ROUTES["nested"] = PAD_ROUTES.get("nested", 0) + 1
        return padded
    except (RuntimeError, NotImplementedError, TypeError):
        PAD_ROUTES["per_image"] = PAD_ROUTES.get("per_image", 0) + 1
    max_h = max(int(image.shape[-2]) for image in images)
    max_w = max(int(image.shape[-1]) for image in images)
    padded = images[0].new_zeros((len(images), 3, max_h, max_w), dtype=dtype)
    for index, image in enumerate(images):
        padded[index, :, : image.shape[-2], : image.shape[-1]] = image
    return padded


def matrix_resize_center_crop(images: Sequence[torch.Tensor], spec: PixelSpec) -> torch.Tensor:
    """Resize and crop uint8 ``(3, H, W)`` images to ``(n, 3, S, S)`` float32 in [0, 255].

    Rows come out in input order. On CPU the products are float32 and the pixels those of
    ``resize_center_crop`` within float rounding (both round at the end, as PIL does). On
    CUDA they are float16 on the tensor cores with float32 accumulation: the pixels (whole
    numbers to 255) are exact in float16, the weights and the intermediate carry ~3
    significant digits, so a pixel may land one level from the float32 result; the model
    then reads the pixels in bfloat16, which rounds coarser than that.
    """
    if not images:
        raise ValueError("no images to resize")
    device = images[0].device
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    shapes = torch.tensor([(int(i.shape[-2]), int(i.shape[-1])) for i in images], dtype=torch.int64)
    shapes = shapes.to(device, non_blocking=True)
    heights, widths = shapes[:, 0], shapes[:, 1]
    new_heights, new_widths = output_sizes(heights, widths, spec.size)
    padded = pad_images(images, dtype)
    n, _, max_h, max_w = padded.shape
    size = spec.size
    rows = axis_weights(heights, new_heights, size, max_h, spec.interpolation).to(dtype)
    cols = axis_weights(widths, new_widths, size, max_w, spec.interpolation).to(dtype)
    # Columns: (n, 3H, W) @ (n, W, S) -> (n, 3, H, S). Rows: bring H last-but-one for one
    # more batched product, (n, S, H) @ (n, H, 3S) -> (n, S, 3, S), then back to channels.
    narrowed = torch.bmm(padded.view(n, 3 * max_h, max_w), cols.transpose(1, 2))
    by_row = narrowed.view(n, 3, max_h, size).transpose(1, 2).reshape(n, max_h, 3 * size)
    out = torch.bmm(rows, by_row).view(n, size, 3, size).transpose(1, 2)
    return out.float().clamp_(0.0, 255.0).round_()
