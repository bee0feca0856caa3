"""ClipEmbedder on CPU with a tiny random-init open_clip model: no downloads."""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from pipelines.embedding import ClipEmbedder, ImageEmbeddings, ImageItemError, ItemError
from pipelines.embedding.gpu_decode import (
    PixelSpec,
    decode_jpegs,
    normalization_constants,
    normalize,
    resize_center_crop,
)
from pipelines.embedding.image_probe import probe_image


def smooth_image(seed: int, height: int, width: int) -> np.ndarray:
    """A seeded smooth RGB image: coarse noise upsampled, like a blurry photo."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, size=(6, 6, 3), dtype=np.uint8)
    return np.asarray(Image.fromarray(coarse).resize((width, height), Image.Resampling.BILINEAR))


def encode(array: np.ndarray, fmt: str = "JPEG", **save: object) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=fmt, **save)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    """Seven JPEGs of different sizes and aspect ratios, two of them the same size."""
    sizes = [(96, 128), (128, 96), (64, 64), (80, 200), (96, 128), (50, 40), (300, 90)]
    return [encode(smooth_image(i, h, w), quality=92) for i, (h, w) in enumerate(sizes)]


def assert_unit_rows(vectors: np.ndarray, dim: int = 32) -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape[1] == dim
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def with_jpeg_size(jpeg: bytes, height: int, width: int) -> bytes:
    """Rewrite the frame header so the JPEG claims another size (a decompression bomb)."""
    sof = jpeg.index(b"\xff\xc0")
    return jpeg[: sof + 5] + struct.pack(">HH", height, width) + jpeg[sof + 9 :]


def corrupt_scan(jpeg: bytes) -> bytes:
    """Keep the headers, scramble the entropy-coded data, keep the end-of-image marker."""
    data = bytearray(jpeg)
    start = jpeg.index(b"\xff\xda") + 20
    for k in range(start, len(data) - 2, 7):
        data[k] = 0xFF if data[k] != 0xFF else 0x00
    return bytes(data)


def test_same_image_gives_same_vector(embedder: ClipEmbedder, jpegs: list[bytes]) -> None:
    first = embedder.embed_images([jpegs[0], jpegs[1], jpegs[0]])
    again = embedder.embed_images([jpegs[0]])
    assert_unit_rows(first)
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_allclose(again[0], first[0], atol=1e-6)
    assert not np.allclose(first[0], first[1])


def test_batch_matches_single_calls(embedder: ClipEmbedder, jpegs: list[bytes]) -> None:
    batched = embedder.embed_images(jpegs)  # batch_size 4: a full and a partial batch
    singles = np.concatenate([embedder.embed_images([jpeg]) for jpeg in jpegs])
    assert batched.shape == (len(jpegs), 32)
    np.testing.assert_allclose(batched, singles, atol=1e-5)


def test_text_embeddings(embedder: ClipEmbedder) -> None:
    vectors = embedder.embed_texts(["a cat on a mat", "a red car", "a cat on a mat"] * 2)
    assert_unit_rows(vectors)
    assert vectors.shape == (6, 32)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
    assert not np.allclose(vectors[0], vectors[1])
    assert embedder.embed_texts([]).shape == (0, 32)
    with pytest.raises(TypeError, match="text item 1 is bytes"):
        embedder.embed_texts(["fine", b"not text"])  # type: ignore[list-item]


def test_png_and_pil_inputs_match(embedder: ClipEmbedder) -> None:
    array = smooth_image(7, 90, 120)
    rgba = np.dstack([array, np.full(array.shape[:2], 255, np.uint8)])
    items: list[object] = [
        encode(array, "PNG"),
        encode(rgba, "PNG"),
        Image.fromarray(array),
        Image.fromarray(array).convert("P", palette=Image.Palette.ADAPTIVE, colors=256),
        encode(array[..., 0], "PNG"),  # grayscale
    ]
    vectors = embedder.embed_images(items)
    assert_unit_rows(vectors)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
    assert float(vectors[0] @ vectors[3]) > 0.99  # palette quantisation moves it a little
    assert np.isfinite(vectors[4]).all()


def test_device_path_matches_pil_path(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes]
) -> None:
    """The batched decode_jpeg + tensor resize path (used on CUDA) agrees with PIL + preprocess."""
    pil = make_embedder()
    device = make_embedder(decoder="torchvision")
    assert device.decode_on_device and not pil.decode_on_device
    expected = pil.embed_images(jpegs)
    got = device.embed_images(jpegs)
    cosine = np.sum(expected * got, axis=1)
    assert cosine.min() > 0.999, cosine
    # Several prepare threads and small batches: rows still land in input order.
    threaded = make_embedder(decoder="torchvision", prepare_threads=3, batch_size=2)
    np.testing.assert_allclose(threaded.embed_images(jpegs), got, atol=1e-6)


def test_probe_sends_scrambled_scans_to_pil(jpegs: list[bytes]) -> None:
    """Only well-formed baseline JPEGs go to the device decoder; the rest go to PIL."""
    assert probe_image(jpegs[0], max_pixels=10**6).device_decodable
    assert not probe_image(corrupt_scan(jpegs[0]), max_pixels=10**6).device_decodable
    truncated = jpegs[0][: len(jpegs[0]) // 2]
    assert not probe_image(truncated, max_pixels=10**6).device_decodable
    progressive = encode(smooth_image(3, 40, 60), quality=90, progressive=True)
    assert probe_image(progressive, max_pixels=10**6).device_decodable
    restarts = encode(smooth_image(4, 40, 60), quality=90, restart_marker_blocks=1)
    assert b"\xff\xd0" in restarts and probe_image(restarts, max_pixels=10**6).device_decodable
    # Where nothing goes to the device the scan is not vetted: PIL decodes every item.
    assert not probe_image(jpegs[0], max_pixels=10**6, for_device=False).device_decodable


def test_tensor_resize_matches_open_clip_preprocess(
    embedder: ClipEmbedder, jpegs: list[bytes]
) -> None:
    spec = embedder.pixel_spec
    assert spec is not None
    assert spec == PixelSpec(64, "bicubic", spec.mean, spec.std)
    decoded = decode_jpegs(jpegs, torch.device("cpu"))
    images = [image for image in decoded if isinstance(image, torch.Tensor)]
    pixels, order = resize_center_crop(images, spec)
    assert sorted(order) == list(range(len(jpegs)))
    assert order != list(range(len(jpegs)))  # the two 96x128 images were grouped
    tensor_path = normalize(pixels, *normalization_constants(spec, torch.device("cpu")))
    for row, position in enumerate(order):
        reference = embedder._preprocess(Image.fromarray(images[position].permute(1, 2, 0).numpy()))
        difference = (tensor_path[row] - reference).abs()
        # Same decoded pixels; resamplers differ by at most one uint8 step after rounding.
        assert float(difference.max()) <= 1.01 / (255 * min(spec.std))
        assert float(difference.mean()) < 0.01


def test_bad_items_are_reported_per_item(embedder: ClipEmbedder, jpegs: list[bytes]) -> None:
    items: list[object] = [
        jpegs[0],
        corrupt_scan(jpegs[1]),
        jpegs[2][: len(jpegs[2]) // 2],
        with_jpeg_size(jpegs[3], 30_000, 30_000),
        b"GIF89a" + bytes(40),
        "photo.jpg",
        b"",
        jpegs[4],
        b"\x89PNG\r\n\x1a\n" + bytes(4),
    ]
    result = embedder.embed_images(items, errors="return")
    assert isinstance(result, ImageEmbeddings)
    reasons = {error.index: error.message for error in result.errors}
    assert sorted(reasons) == [1, 2, 3, 4, 5, 6, 8]
    assert reasons[1].startswith("corrupt JPEG")
    assert reasons[2].startswith("corrupt JPEG") and "truncated" in reasons[2]
    assert reasons[3] == (
        "image is 30000x30000 = 900,000,000 pixels, over the limit of 50,000,000 pixels "
        "(max_pixels)"
    )
    assert reasons[4] == "unsupported image format GIF; send JPEG or PNG"
    assert "unsupported item type str" in reasons[5]
    assert reasons[6] == "empty image data"
    assert reasons[8] == "corrupt PNG: missing IHDR header"
    assert all(isinstance(error, ItemError) for error in result.errors)
    assert result.ok.tolist() == [True] + [False] * 6 + [True, False]
    assert np.isnan(result.vectors[~result.ok]).all()
    np.testing.assert_allclose(
        result.vectors[[0, 7]], embedder.embed_images([jpegs[0], jpegs[4]]), atol=1e-6
    )


def test_device_path_reports_corrupt_items(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes]
) -> None:
    device = make_embedder(decoder="torchvision")
    result = device.embed_images([jpegs[0], corrupt_scan(jpegs[1]), jpegs[2]], errors="return")
    assert [index for index, _ in result.errors] == [1]
    assert result.errors[0].message.startswith("corrupt JPEG")
    np.testing.assert_allclose(
        result.vectors[[0, 2]], device.embed_images([jpegs[0], jpegs[2]]), atol=1e-6
    )


def test_batched_decode_isolates_bad_streams(jpegs: list[bytes]) -> None:
    streams = [jpegs[0], corrupt_scan(jpegs[1]), jpegs[2], jpegs[3], corrupt_scan(jpegs[4])]
    decoded = decode_jpegs(streams, torch.device("cpu"))
    assert [isinstance(d, str) for d in decoded] == [False, True, False, False, True]
    assert all(d.startswith("corrupt JPEG: ") for d in decoded if isinstance(d, str))
    good = decoded[2]
    assert isinstance(good, torch.Tensor) and good.dtype == torch.uint8
    assert tuple(good.shape) == (3, 64, 64)


def test_first_bad_item_raises_by_default(embedder: ClipEmbedder, jpegs: list[bytes]) -> None:
    with pytest.raises(ImageItemError, match=r"^image item 2: corrupt JPEG") as raised:
        embedder.embed_images([jpegs[0], jpegs[1], corrupt_scan(jpegs[2])])
    assert raised.value.index == 2
    with pytest.raises(ValueError, match="errors must be"):
        embedder.embed_images([jpegs[0]], errors="ignore")  # type: ignore[call-overload]


def test_max_pixels_is_configurable(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes]
) -> None:
    small = make_embedder(max_pixels=100 * 100)
    result = small.embed_images([jpegs[2], jpegs[0], Image.new("RGB", (101, 100))], errors="return")
    assert [index for index, _ in result.errors] == [1, 2]
    assert result.errors[0].message.startswith("image is 128x96 = 12,288 pixels")


def test_refuses_to_run_without_weights(tiny_model: str) -> None:
    with pytest.raises(ValueError, match="has no weights: pass pretrained=") as raised:
        ClipEmbedder("ViT-B-32", device="cpu")
    assert "laion2b_s34b_b79k" in str(raised.value)
    assert "random_init=True" in str(raised.value)
    with pytest.raises(ValueError, match="does not exist"):
        ClipEmbedder(tiny_model, pretrained="/nonexistent/weights.pt", device="cpu")
    with pytest.raises(ValueError, match="neither a checkpoint file nor an open_clip"):
        ClipEmbedder("ViT-B-32", pretrained="no-such-tag", device="cpu")
    with pytest.raises(ValueError, match="unknown open_clip model 'ViT-Q-99'"):
        ClipEmbedder("ViT-Q-99", random_init=True, device="cpu")
    with pytest.raises(ValueError, match="not both"):
        ClipEmbedder(tiny_model, pretrained="x.pt", random_init=True, device="cpu")


def test_loads_local_checkpoint(
    embedder: ClipEmbedder,
    make_embedder: Callable[..., ClipEmbedder],
    write_checkpoint: Callable[[ClipEmbedder], Path],
    jpegs: list[bytes],
) -> None:
    path = write_checkpoint(embedder)
    torch.manual_seed(123)  # different random init; the checkpoint must override it
    loaded = ClipEmbedder(embedder.model_name, pretrained=path, device="cpu", batch_size=4)
    try:
        np.testing.assert_allclose(
            loaded.embed_images(jpegs[:3]), embedder.embed_images(jpegs[:3]), atol=1e-6
        )
        np.testing.assert_allclose(
            loaded.embed_texts(["a dog"]), embedder.embed_texts(["a dog"]), atol=1e-6
        )
    finally:
        loaded.close()


def test_vit_b_32_random_init_on_cpu(jpegs: list[bytes]) -> None:
    with ClipEmbedder("ViT-B-32", random_init=True, device="cpu", batch_size=2) as clip:
        assert clip.precision == "fp32" and clip.dim == 512
        images = clip.embed_images(jpegs[:2])
        texts = clip.embed_texts(["a photo of a cat"])
    assert_unit_rows(images, dim=512)
    assert_unit_rows(texts, dim=512)


# The CUDA path (nvJPEG on side streams) runs only where a GPU is: bench/gpu_check.sh
# runs this file there. CI has no GPU, so these skip in CI.
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_fast_path_matches_reference_path(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes], precision: str
) -> None:
    """nvJPEG + tensor resize against PIL + open_clip preprocess, on the GPU."""
    fast = make_embedder(device="cuda", precision=precision)
    reference = make_embedder(device="cuda", precision=precision, decoder="pil")
    assert fast.decode_on_device and not reference.decode_on_device
    cosine = np.sum(fast.embed_images(jpegs) * reference.embed_images(jpegs), axis=1)
    assert cosine.min() > (0.999 if precision == "fp32" else 0.99), cosine


@needs_cuda
def test_cuda_path_reports_corrupt_items(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes]
) -> None:
    """nvJPEG's hardware decoder does not notice a scrambled scan; the probe must."""
    fast = make_embedder(device="cuda", precision="fp32")
    items = [jpegs[0], corrupt_scan(jpegs[1]), jpegs[2], jpegs[3][: len(jpegs[3]) // 2], b"x"]
    result = fast.embed_images(items, errors="return")
    assert [index for index, _ in result.errors] == [1, 3, 4], result.errors
    np.testing.assert_allclose(
        result.vectors[[0, 2]], fast.embed_images([jpegs[0], jpegs[2]]), atol=1e-5
    )
