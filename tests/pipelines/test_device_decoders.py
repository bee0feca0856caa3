"""Device decoder backends: how one is chosen, and the glue each adds around its library."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from pipelines.embedding import ClipEmbedder
from pipelines.embedding.batch_preparer import BatchPreparer
from pipelines.embedding.dali_decode import sample_arguments
from pipelines.embedding.device_decoders import (
    TorchvisionDecoder,
    installed_backends,
    resolve_decoder,
)
from pipelines.embedding.device_pixels import DevicePixels
from pipelines.embedding.gpu_decode import PixelSpec, resize_center_crop, shortest_side_size
from pipelines.embedding.image_probe import ImageProbe, probe_image
from pipelines.embedding.nvimgcodec_decode import DECODER_OPTIONS, NvImageCodecDecoder
from tests.pipelines.test_embedding import corrupt_scan, encode, smooth_image

SPEC = PixelSpec(64, "bicubic", (0.48, 0.46, 0.41), (0.27, 0.26, 0.28))
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    sizes = [(96, 128), (128, 96), (64, 64), (80, 200), (50, 40), (300, 90)]
    return [encode(smooth_image(i, h, w), quality=92) for i, (h, w) in enumerate(sizes)]


def probes(items: Sequence[bytes]) -> list[ImageProbe]:
    return [probe_image(item, max_pixels=10**7) for item in items]


@pytest.mark.parametrize(
    ("name", "cuda", "installed", "expected"),
    [
        ("auto", False, {"dali", "nvimgcodec"}, "pil"),
        ("auto", True, {"dali", "nvimgcodec"}, "dali"),
        ("auto", True, {"nvimgcodec"}, "nvimgcodec"),
        ("auto", True, set(), "torchvision"),
        ("torchvision", False, set(), "torchvision"),
        ("pil", True, {"dali"}, "pil"),
        ("nvimgcodec", True, {"nvimgcodec"}, "nvimgcodec"),
    ],
)
def test_resolve_decoder(name: str, cuda: bool, installed: set[str], expected: str) -> None:
    assert resolve_decoder(name, cuda=cuda, installed=installed) == expected


@pytest.mark.parametrize(
    ("name", "cuda", "installed", "match"),
    [
        ("dali", False, {"dali"}, "needs a CUDA device"),
        ("nvimgcodec", True, set(), "nvidia-nvimgcodec-cu13"),
        ("dali", True, {"nvimgcodec"}, "nvidia-dali-cuda130"),
        ("nvjpeg", True, set(), "must be one of auto, dali"),
    ],
)
def test_resolve_decoder_refuses(name: str, cuda: bool, installed: set[str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        resolve_decoder(name, cuda=cuda, installed=installed)


def test_embedder_refuses_unusable_decoder(tiny_model: str) -> None:
    with pytest.raises(ValueError, match="needs a CUDA device"):
        ClipEmbedder(tiny_model, random_init=True, device="cpu", decoder="dali")
    with pytest.raises(ValueError, match="must be one of"):
        ClipEmbedder(tiny_model, random_init=True, device="cpu", decoder="opencv")
    with pytest.raises(ValueError, match="hw_decoder_load"):
        ClipEmbedder(tiny_model, random_init=True, device="cpu", hw_decoder_load=1.5)


@pytest.mark.parametrize("size", [224, 64, 336])
def test_dali_sample_arguments_give_torchvision_geometry(size: int) -> None:
    shapes = [(h, w) for h in (50, 224, 225, 301, 500, 4000) for w in (40, 224, 257, 333, 9000)]
    fake = [ImageProbe("jpeg", w, h, device_decodable=True) for h, w in shapes]
    widths, heights, pos_x, pos_y = sample_arguments(fake, size)
    for k, (h, w) in enumerate(shapes):
        new_h, new_w = shortest_side_size(h, w, size)
        assert (int(heights[k]), int(widths[k])) == (new_h, new_w)
        top, left = int(round((new_h - size) / 2.0)), int(round((new_w - size) / 2.0))
        # DALI's crop start is pos * (extent - crop), then truncated or rounded by version.
        for pos, extent, want in ((pos_x[k], new_w, left), (pos_y[k], new_h, top)):
            assert 0.0 <= float(pos) <= 1.0
            start = float(pos) * (extent - size)
            assert int(start) == want and round(start) == want, (h, w, extent)


def test_dali_sample_arguments_crop_matches_tensor_crop() -> None:
    """The offsets are the ones resize_center_crop takes, on real pixels."""
    image = torch.from_numpy(np.array(smooth_image(3, 80, 200))).permute(2, 0, 1).contiguous()
    crop, _ = resize_center_crop([image], SPEC)
    (width,), (height,), (pos_x,), (pos_y,) = sample_arguments(
        [ImageProbe("jpeg", 200, 80, device_decodable=True)], SPEC.size
    )
    resized = (
        torch.nn.functional.interpolate(
            image[None].float(), size=(int(height), int(width)), mode="bicubic", antialias=True
        )
        .clamp_(0, 255)
        .round_()
    )
    left = int(float(pos_x) * (int(width) - SPEC.size))
    top = int(float(pos_y) * (int(height) - SPEC.size))
    torch.testing.assert_close(resized[..., top : top + 64, left : left + 64], crop)


class FakeNvImageCodec:
    """Decodes with PIL into host HWC arrays (the real images are device buffers with
    ``__cuda_array_interface__``); None for streams listed in ``fail``, as nvimgcodec does."""

    class ColorSpec:
        SRGB = "srgb"

    class BackendKind:
        HW_GPU_ONLY, GPU_ONLY, HYBRID_CPU_GPU = "hw", "gpu", "hybrid"

    def __init__(self, fail: Sequence[bytes] = (), raise_on_decode: bool = False) -> None:
        self.fail = set(fail)
        self.raise_on_decode = raise_on_decode
        self.calls: list[dict[str, Any]] = []
        outer = self

        class Decoder:
            def __init__(self, **kwargs: Any) -> None:
                outer.calls.append({"init": kwargs})

            def decode(self, streams: list[Any], **kwargs: Any) -> list[np.ndarray | None]:
                outer.calls.append({"decode": kwargs, "n": len(streams)})
                if outer.raise_on_decode:
                    raise RuntimeError("nvimgcodec: invalid parameter")
                out: list[np.ndarray | None] = []
                for stream in streams:
                    data = bytes(stream)
                    if data in outer.fail:
                        out.append(None)
                        continue
                    rgb = np.array(Image.open(io.BytesIO(data)).convert("RGB"))
                    out.append(rgb)
                return out

        self.Decoder = Decoder

    @staticmethod
    def DecodeParams(**kwargs: Any) -> dict[str, Any]:  # noqa: N802  (the library's name)
        return kwargs

    @staticmethod
    def Backend(kind: str, load_hint: float = 1.0) -> tuple[str, float]:  # noqa: N802
        return (kind, load_hint)


def test_nvimgcodec_glue_matches_torchvision_path(jpegs: list[bytes]) -> None:
    fake = FakeNvImageCodec(fail=[jpegs[2]])
    decoder = NvImageCodecDecoder(CPU, SPEC, hw_decoder_load=0.6, module=fake)
    items = [jpegs[0], memoryview(jpegs[1]), jpegs[2], jpegs[3], jpegs[4], jpegs[5]]
    got = decoder.decode_resize(items, probes(jpegs))
    assert got.refused == {2: "the device decoder could not decode it"}
    expected = TorchvisionDecoder(CPU, SPEC).decode_resize(jpegs, probes(jpegs))
    assert got.pixels is not None and expected.pixels is not None
    rows = {p: got.pixels[k] for k, p in enumerate(got.positions)}
    want = {p: expected.pixels[k] for k, p in enumerate(expected.positions)}
    assert sorted(rows) == [0, 1, 3, 4, 5]
    for position, pixels in rows.items():
        # libjpeg-turbo under both PIL and torchvision: the same pixels, the same resize.
        torch.testing.assert_close(pixels, want[position], atol=1e-4, rtol=0)
    init = fake.calls[0]["init"]
    assert init["options"] == DECODER_OPTIONS == ":fancy_upsampling=1"
    assert init["backends"][0] == ("hw", 0.6)
    decode = fake.calls[1]["decode"]
    assert decode["params"]["apply_exif_orientation"] is False
    assert decode["cuda_stream"] == 0


def test_nvimgcodec_failed_call_sends_the_batch_to_pil(jpegs: list[bytes]) -> None:
    decoder = NvImageCodecDecoder(CPU, SPEC, module=FakeNvImageCodec(raise_on_decode=True))
    got = decoder.decode_resize(jpegs[:3], probes(jpegs[:3]))
    assert got.pixels is None and sorted(got.refused) == [0, 1, 2]
    assert "invalid parameter" in got.refused[0]


class RefusingDecoder:
    """Torchvision decode that refuses chosen positions, as a backend's error report would."""

    name = "refusing"

    def __init__(self, refuse: set[int], spec: PixelSpec) -> None:
        self.inner = TorchvisionDecoder(CPU, spec)
        self.refuse = refuse

    def decode_resize(self, datas: Sequence[Any], probes: Sequence[ImageProbe]) -> DevicePixels:
        keep = [p for p in range(len(datas)) if p not in self.refuse]
        inner = self.inner.decode_resize([datas[p] for p in keep], [probes[p] for p in keep])
        positions = [keep[p] for p in inner.positions]
        return DevicePixels(inner.pixels, positions, dict.fromkeys(self.refuse, "refused"))


def test_refused_items_go_to_pil(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes]
) -> None:
    pil = make_embedder(decoder="pil")
    spec = pil.pixel_spec
    assert spec is not None
    items = [jpegs[0], jpegs[1], corrupt_scan(jpegs[2]), jpegs[3]]
    preparer = BatchPreparer(
        device=CPU,
        preprocess=pil._preprocess,
        device_decoder=RefusingDecoder({1}, spec),
        pixel_dtype=torch.float32,
        max_pixels=10**7,
        decode_threads=2,
        prepare_threads=1,
    )
    try:
        (batch,) = list(preparer.batches(items, batch_size=4))
    finally:
        preparer.close()
    assert sorted(batch.rows) == [0, 1, 3]  # item 1 came back through PIL
    assert list(batch.failures) == [2] and batch.failures[2].startswith("corrupt JPEG")
    assert batch.pixels is not None
    reference = pil.encode_pixel_batch(
        torch.stack(
            [pil._preprocess(Image.open(io.BytesIO(items[i])).convert("RGB")) for i in batch.rows]
        )
    )
    got = pil.encode_pixel_batch(batch.pixels)
    assert float((got * reference).sum(dim=1).min()) > 0.999


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
@pytest.mark.parametrize("name", ["dali", "nvimgcodec", "torchvision"])
def test_cuda_decoder_matches_pil(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes], name: str
) -> None:
    """Each installed backend against PIL + open_clip preprocess, and its corrupt-item report."""
    if name != "torchvision" and name not in installed_backends():
        pytest.skip(f"{name} is not installed")
    fast = make_embedder(device="cuda", precision="fp32", decoder=name)
    reference = make_embedder(device="cuda", precision="fp32", decoder="pil")
    assert fast.decoder == name
    cosine = np.sum(fast.embed_images(jpegs) * reference.embed_images(jpegs), axis=1)
    assert cosine.min() > 0.999, cosine
    items = [jpegs[0], corrupt_scan(jpegs[1]), jpegs[2], jpegs[3][: len(jpegs[3]) // 2]]
    result = fast.embed_images(items, errors="return")
    assert [index for index, _ in result.errors] == [1, 3], result.errors


def test_use_decoder_switches_one_embedder(
    make_embedder: Callable[..., ClipEmbedder], jpegs: list[bytes]
) -> None:
    embedder = make_embedder(decoder="pil")
    assert embedder.decoder == "pil" and not embedder.decode_on_device
    reference = embedder.embed_images(jpegs)
    embedder.use_decoder("torchvision")
    assert embedder.decoder == "torchvision" and embedder.decode_on_device
    cosine = np.sum(embedder.embed_images(jpegs) * reference, axis=1)
    assert cosine.min() > 0.999
    with pytest.raises(ValueError, match="needs a CUDA device"):
        embedder.use_decoder("nvimgcodec")
    assert embedder.decoder == "torchvision"  # a refused switch leaves the decoder as it was
    embedder.use_decoder("auto")
    assert embedder.decoder == "pil"  # auto on CPU


needs_dali = pytest.mark.skipif(
    not installed_backends() >= {"dali"}, reason="nvidia-dali is not installed"
)


@needs_dali
def test_dali_graph_on_cpu_matches_torchvision_path(jpegs: list[bytes]) -> None:
    """The DALI graph (sizes, crop, normalisation) as a CPU pipeline, against the tensor path."""
    from pipelines.embedding.dali_decode import DaliDecoder

    fallback = TorchvisionDecoder(CPU, SPEC)
    decoder = DaliDecoder(CPU, SPEC, max_batch=8, fallback=fallback)
    got = decoder.decode_resize(jpegs, probes(jpegs))
    want = fallback.decode_resize(jpegs, probes(jpegs))
    assert got.refused == {} and got.positions == list(range(len(jpegs)))
    assert got.pixels is not None and want.pixels is not None
    expected = torch.empty_like(got.pixels)
    expected[want.positions] = want.pixels
    step = 1.0 / (255.0 * min(SPEC.std))  # one uint8 level in normalised units
    diff = (got.pixels - expected).abs()
    assert float(diff.max()) <= 1.01 * step and float(diff.mean()) < 0.2 * step
    # A batch DALI fails on goes to the fallback, which names the bad item; then DALI again.
    items = [jpegs[0], b"\xff\xd8\xff" + bytes(40), jpegs[2]]  # geometry: the good probes
    mixed = decoder.decode_resize(items, probes(jpegs[:3]))
    assert list(mixed.refused) == [1] and mixed.positions == [0, 2]
    again = decoder.decode_resize(jpegs, probes(jpegs))
    assert again.pixels is not None and torch.equal(again.pixels, got.pixels)


def test_a_package_that_does_not_import_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from pipelines.embedding.device_decoders import build_device_decoder

    real_import = builtins.__import__

    def broken(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("nvidia"):
            raise ImportError("libnvimgcodec.so.0: cannot open shared object file")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(ValueError, match="could not load nvidia-nvimgcodec-cu13.*libnvimgcodec"):
        build_device_decoder("nvimgcodec", CPU, SPEC, max_batch=4, hw_decoder_load=0.5)
