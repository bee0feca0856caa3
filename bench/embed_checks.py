"""Per-decoder checks for bench/embed.py: the stage breakdown and fp32 parity with PIL."""

from __future__ import annotations

import io
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from PIL import Image

from pipelines.embedding import ClipEmbedder
from pipelines.embedding.gpu_decode import decode_jpegs, resize_center_crop
from pipelines.embedding.image_probe import probe_image
from pipelines.embedding.matrix_resize import matrix_resize_center_crop


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def breakdown(embedder: ClipEmbedder, jpegs: list[bytes], reps: int = 3) -> dict[str, Any]:
    """Milliseconds per batch for each stage alone, then decode and model each timed while
    the other runs in a loop on another thread: if they overlap, the times barely move."""
    device, decoder = embedder.device, embedder._preparer.device_decoder
    assert decoder is not None
    batch = jpegs[: embedder.batch_size]
    probes = [probe_image(j, max_pixels=embedder.max_pixels) for j in batch]
    decoded = decoder.decode_resize(batch, probes)
    assert decoded.pixels is not None
    pixels = decoded.pixels.to(embedder.pixel_dtype)
    if device.type == "cuda":
        pixels = pixels.contiguous(memory_format=torch.channels_last)

    def timed(step: Callable[[], object]) -> float:
        times = []
        for _ in range(reps):
            synchronize(device)
            start = time.perf_counter()
            step()
            synchronize(device)
            times.append(time.perf_counter() - start)
        return round(statistics.median(times) * 1000, 1)

    def decode() -> object:
        return decoder.decode_resize(batch, probes)

    def model() -> object:
        return embedder.encode_pixel_batch(pixels)

    def while_looping(background: Callable[[], object], step: Callable[[], object]) -> float:
        stop, warm = threading.Event(), threading.Event()

        def loop() -> None:
            with torch.inference_mode():
                while not stop.is_set():
                    background()
                    if device.type == "cuda":
                        torch.cuda.current_stream(device).synchronize()
                    warm.set()  # after one full round (a decoder's per-thread setup included)

        thread = threading.Thread(target=loop)
        thread.start()
        try:
            warm.wait(timeout=60)
            with torch.inference_mode():
                return timed(step)
        finally:
            stop.set()
            thread.join()

    with torch.inference_mode():
        result: dict[str, Any] = {
            "batch": len(batch),
            "probe_ms": timed(
                lambda: [probe_image(j, max_pixels=embedder.max_pixels) for j in batch]
            ),
            "decode_resize_ms": timed(decode),
            "model_ms": timed(model),
        }
    result.update(resize_timings(embedder, batch, timed))
    result["decode_ms_while_model_loops"] = while_looping(model, decode)
    result["model_ms_while_decode_loops"] = while_looping(decode, model)
    return result


def resize_timings(
    embedder: ClipEmbedder, batch: list[bytes], timed: Callable[[Callable[[], object]], float]
) -> dict[str, Any]:
    """The resize stage alone, both ways, on one batch decoded by torchvision: one
    ``interpolate`` per distinct size (the CPU path) against the two batched products."""
    spec = embedder.pixel_spec
    assert spec is not None
    images = [d for d in decode_jpegs(batch, embedder.device) if isinstance(d, torch.Tensor)]
    with torch.inference_mode():
        return {
            "torchvision_decode_only_ms": timed(lambda: decode_jpegs(batch, embedder.device)),
            "distinct_sizes": len({tuple(i.shape) for i in images}),
            "resize_grouped_ms": timed(lambda: resize_center_crop(images, spec)),
            "resize_matrix_ms": timed(lambda: matrix_resize_center_crop(images, spec)),
        }


def parity(embedder: ClipEmbedder, jpegs: list[bytes]) -> dict[str, Any]:
    """The current decoder's pixels against PIL decode + open_clip's preprocess, through
    the same weights in fp32 (the model keeps fp32 weights; bf16 is autocast only)."""
    device, model = embedder.device, embedder._model
    probes = [probe_image(j, max_pixels=embedder.max_pixels) for j in jpegs]
    decoder = embedder._preparer.device_decoder
    if decoder is None:
        return {"n": 0, "note": "the PIL path is the reference"}
    rows = [i for i, p in enumerate(probes) if p.device_decodable]
    with torch.inference_mode():
        out = decoder.decode_resize([jpegs[i] for i in rows], [probes[i] for i in rows])
        assert out.pixels is not None, out.refused
        order = [rows[position] for position in out.positions]
        reference = torch.stack(
            [embedder._preprocess(Image.open(io.BytesIO(jpegs[i])).convert("RGB")) for i in order]
        ).to(device)

        def encode(pixels: torch.Tensor) -> np.ndarray:
            features = model.encode_image(pixels.float())
            return torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy()

        cosine = np.sum(encode(out.pixels) * encode(reference), axis=1)
        max_abs = float((out.pixels.float() - reference).abs().max())
    return {
        "n": len(order),
        "refused": len(out.refused),
        "precision": "fp32",
        "min_cosine": round(float(cosine.min()), 6),
        "median_cosine": round(float(np.median(cosine)), 6),
        "max_abs_pixel_diff": round(max_abs, 4),  # in normalised units (~1/58 per uint8 step)
    }
