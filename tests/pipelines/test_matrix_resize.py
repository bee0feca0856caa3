"""The batched-matrix resize against the per-size ``interpolate`` path it replaces on CUDA."""

from __future__ import annotations

import pytest
import torch

from pipelines.embedding.gpu_decode import PixelSpec, resize_center_crop, shortest_side_size
from pipelines.embedding.matrix_resize import (
    axis_weights,
    matrix_resize_center_crop,
    output_sizes,
    pad_images,
)

MEAN, STD = (0.48, 0.46, 0.41), (0.27, 0.26, 0.28)


def _images(seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    sizes = [(40, 40), (57, 31), (31, 90), (64, 48), (48, 64), (33, 33), (90, 41), (32, 32)]
    images = []
    for height, width in sizes:
        # Smooth plus noise, like a photo: random noise alone would exaggerate rounding.
        coarse = torch.rand(1, 3, 4, 4, generator=generator) * 255
        smooth = torch.nn.functional.interpolate(coarse, size=(height, width), mode="bilinear")
        noisy = smooth[0] + torch.randn(3, height, width, generator=generator) * 6
        images.append(noisy.clamp(0, 255).round().to(torch.uint8))
    return images


@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
def test_same_pixels_as_the_grouped_interpolate(interpolation: str) -> None:
    spec = PixelSpec(32, interpolation, MEAN, STD)
    images = _images()
    grouped, order = resize_center_crop(images, spec)
    batched = matrix_resize_center_crop(images, spec)[order]
    difference = (grouped - batched).abs()
    # Both round at the end; only values within float noise of a .5 may land apart.
    assert difference.max() <= 1.0
    assert (difference > 0).float().mean() < 1e-3


def test_upscaling_and_identity_sizes() -> None:
    spec = PixelSpec(32, "bicubic", MEAN, STD)
    images = [torch.full((3, 32, 32), 7, dtype=torch.uint8), _images()[1]]  # 32 = no resize
    out = matrix_resize_center_crop(images, spec)
    assert torch.equal(out[0], torch.full((3, 32, 32), 7.0))
    assert out.shape == (2, 3, 32, 32)


def test_weights_sum_to_one_and_ignore_the_padding() -> None:
    weights = axis_weights(
        torch.tensor([50, 80]), torch.tensor([32, 51]), crop=32, width=80, interpolation="bicubic"
    )
    assert torch.allclose(weights.sum(-1), torch.ones(2, 32), atol=1e-6)
    assert torch.count_nonzero(weights[0, :, 50:]) == 0


def test_output_sizes_follow_torchvision_resize() -> None:
    heights, widths = torch.tensor([300, 257, 500, 224]), torch.tensor([257, 300, 333, 224])
    new_h, new_w = output_sizes(heights, widths, 224)
    for h, w, nh, nw in zip(heights, widths, new_h, new_w, strict=True):
        assert (int(nh), int(nw)) == shortest_side_size(int(h), int(w), 224)


def test_pad_images_keeps_each_image_and_zeroes_the_rest() -> None:
    images = _images()[:3]
    padded = pad_images(images, torch.uint8)
    assert padded.shape == (3, 3, 57, 90)
    for index, image in enumerate(images):
        height, width = image.shape[-2:]
        assert torch.equal(padded[index, :, :height, :width], image)
        assert padded[index, :, height:, :].sum() == 0 and padded[index, :, :, width:].sum() == 0


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="no images"):
        matrix_resize_center_crop([], PixelSpec(32, "bicubic", MEAN, STD))
