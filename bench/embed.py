"""Embedding throughput: the model alone on preprocessed tensors, and JPEG bytes end to end.

    .venv/bin/python bench/embed.py --device cpu --n 64 --batch-size 32 --random-init
    python3 bench/embed.py --device cuda --models ViT-B-32,ViT-L-14 --n 16384 \\
        --batch-size 1024 --random-init --out embed.json

Prints one JSON object: ``env`` and one entry per model in ``results`` with ``device``,
``model``, ``precision``, ``batch_size``, ``breakdown`` (with ``--breakdown``: each stage's
milliseconds per batch, alone and beside the other), ``raw_img_per_s`` (model only, on normalised
tensors already on the device), ``prep_img_per_s`` (JPEG bytes to normalised tensors, no
model) and ``e2e_jpeg_img_per_s`` (JPEG bytes to L2-normalised numpy vectors; median of
``--repeat`` runs), and ``parity``: cosine between the fast path's vectors and those of PIL
decode + open_clip preprocess + the eager model, for the first 64 JPEGs. Random init by default because no weights can be downloaded here;
throughput does not depend on the weights. The synthetic JPEGs are smooth images with
photo-like noise, each side 256-500 px, quality 90, so every image has its own size.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipelines.embedding import ClipEmbedder  # noqa: E402
from pipelines.embedding.gpu_decode import decode_jpegs, resize_center_crop  # noqa: E402
from pipelines.embedding.image_probe import probe_image  # noqa: E402


def synthetic_jpegs(
    count: int, *, seed: int = 0, sides: tuple[int, int] = (256, 500), quality: int = 90
) -> list[bytes]:
    """Seeded JPEGs: a smooth random field plus pixel noise, so sizes look like photos."""

    def make(index: int) -> bytes:
        rng = np.random.default_rng([seed, index])
        height, width = (int(v) for v in rng.integers(sides[0], sides[1] + 1, size=2))
        coarse = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
        smooth = Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC)
        noisy = np.asarray(smooth, dtype=np.int16) + rng.normal(0, 8, (height, width, 3))
        buffer = io.BytesIO()
        Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(
            buffer, format="JPEG", quality=quality
        )
        return buffer.getvalue()

    with ThreadPoolExecutor(min(16, os.cpu_count() or 1)) as pool:
        return list(pool.map(make, range(count)))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_loop(
    step: Callable[[], object], device: torch.device, *, min_seconds: float, min_iters: int
) -> tuple[int, float]:
    """Run ``step`` until both limits are met; return (iterations, seconds)."""
    synchronize(device)
    start = time.perf_counter()
    iters = 0
    while iters < min_iters or time.perf_counter() - start < min_seconds:
        step()
        iters += 1
    synchronize(device)
    return iters, time.perf_counter() - start


def raw_throughput(embedder: ClipEmbedder, args: argparse.Namespace) -> float:
    spec = embedder.pixel_spec
    size = spec.size if spec is not None else 224
    pixels = torch.randn(args.batch_size, 3, size, size, device=embedder.device)
    if embedder.device.type == "cuda":
        pixels = pixels.to(dtype=embedder.pixel_dtype, memory_format=torch.channels_last)
    for _ in range(args.warmup):
        embedder.encode_pixel_batch(pixels)
    iters, seconds = timed_loop(
        lambda: embedder.encode_pixel_batch(pixels),
        embedder.device,
        min_seconds=args.min_seconds,
        min_iters=args.min_iters,
    )
    return args.batch_size * iters / seconds


def prep_throughput(embedder: ClipEmbedder, jpegs: list[bytes]) -> float:
    """Decode, resize and normalise only: what the model would be fed, at what rate."""
    with torch.inference_mode():
        start = time.perf_counter()
        for prepared in embedder._preparer.batches(jpegs, embedder.batch_size):
            if prepared.ready is not None:
                prepared.ready.synchronize()
        synchronize(embedder.device)
        return len(jpegs) / (time.perf_counter() - start)


def parity(embedder: ClipEmbedder, jpegs: list[bytes]) -> dict[str, Any]:
    """The fast path (device decode and tensor resize) against the reference one
    (PIL decode and open_clip's preprocess, eager model), on the same weights."""
    fast = embedder.embed_images(jpegs)
    reference = torch.stack(
        [embedder._preprocess(Image.open(io.BytesIO(j)).convert("RGB")) for j in jpegs]
    ).to(embedder.device, dtype=embedder.pixel_dtype)
    if embedder.device.type == "cuda":
        reference = reference.contiguous(memory_format=torch.channels_last)
    slow = embedder.encode_pixel_batch(reference).cpu().numpy()
    cosine = np.sum(fast * slow, axis=1)
    return {
        "n": len(jpegs),
        "min_cosine": round(float(cosine.min()), 6),
        "median_cosine": round(float(np.median(cosine)), 6),
    }


def breakdown(embedder: ClipEmbedder, jpegs: list[bytes], reps: int = 3) -> dict[str, Any]:
    """Milliseconds per batch for each stage alone, then decode and model each timed while
    the other runs in a loop on another thread: if they overlap, the times barely move."""
    device, spec = embedder.device, embedder.pixel_spec
    assert spec is not None
    batch = jpegs[: embedder.batch_size]
    decoded = [d for d in decode_jpegs(batch, device) if isinstance(d, torch.Tensor)]
    pixels, _ = resize_center_crop(decoded, spec)
    pixels = pixels.to(embedder.pixel_dtype)
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
        return decode_jpegs(batch, device)

    def model() -> object:
        return embedder.encode_pixel_batch(pixels)

    def while_looping(background: Callable[[], object], step: Callable[[], object]) -> float:
        stop = threading.Event()

        def loop() -> None:
            with torch.inference_mode():
                while not stop.is_set():
                    background()
                    if device.type == "cuda":
                        torch.cuda.current_stream(device).synchronize()

        thread = threading.Thread(target=loop)
        thread.start()
        try:
            time.sleep(0.2)
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
            "decode_ms": timed(decode),
            "resize_ms": timed(lambda: resize_center_crop(decoded, spec)),
            "model_ms": timed(model),
        }
    result["decode_ms_while_model_loops"] = while_looping(model, decode)
    result["model_ms_while_decode_loops"] = while_looping(decode, model)
    return result


def bench_model(model: str, jpegs: list[bytes], args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = ClipEmbedder(
        model,
        random_init=args.random_init,
        pretrained=args.pretrained,
        device=args.device,
        precision=args.precision,
        batch_size=args.batch_size,
        decode_on_device=False if args.cpu_decode else None,
        prepare_threads=args.prepare_threads,
    )
    result: dict[str, Any] = {
        "device": embedder.device.type,
        "device_name": (
            torch.cuda.get_device_name(embedder.device)
            if embedder.device.type == "cuda"
            else platform.processor() or platform.machine()
        ),
        "model": model,
        "precision": embedder.precision,
        "batch_size": args.batch_size,
        "n": len(jpegs),
        "decode_on_device": embedder.decode_on_device,
        "prepare_threads": embedder._preparer.prepare_threads,
        "weights": "random_init" if args.random_init else str(args.pretrained),
    }
    try:
        if args.breakdown:
            result["breakdown"] = breakdown(embedder, jpegs)
        result["raw_img_per_s"] = round(raw_throughput(embedder, args), 1)
        embedder.embed_images(jpegs[: args.batch_size])  # warm up
        result["prep_img_per_s"] = round(prep_throughput(embedder, jpegs), 1)
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            vectors = embedder.embed_images(jpegs)
            runs.append(len(jpegs) / (time.perf_counter() - start))
            if time.perf_counter() - args.t0 > args.time_budget:
                break
        assert vectors.shape == (len(jpegs), embedder.dim) and np.isfinite(vectors).all()
        result["e2e_jpeg_img_per_s"] = round(statistics.median(runs), 1)
        result["e2e_runs"] = [round(r, 1) for r in runs]
        result["parity"] = parity(embedder, jpegs[: min(64, len(jpegs))])
        if embedder.device.type == "cuda":
            result["max_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    except Exception as exc:  # keep what was measured before the failure
        result["error"] = repr(exc)
        result["traceback"] = traceback.format_exc()[-2000:]
    finally:
        embedder.close()
        result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def environment() -> dict[str, Any]:
    import open_clip
    import torchvision

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "open_clip": open_clip.__version__,
        "cpu_count": os.cpu_count(),
        "cuda_available": torch.cuda.is_available(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--models", default="ViT-B-32", help="comma-separated open_clip names")
    parser.add_argument("--n", type=int, default=64, help="JPEGs per end-to-end run")
    parser.add_argument("--sides", default="256,500", help="MIN,MAX px per side of the JPEGs")
    parser.add_argument("--unique", type=int, default=1024, help="distinct JPEGs, cycled to n")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    parser.add_argument("--random-init", action="store_true", help="untrained weights")
    parser.add_argument("--pretrained", default=None, help="open_clip tag or checkpoint path")
    parser.add_argument("--cpu-decode", action="store_true", help="PIL decode even on CUDA")
    parser.add_argument("--prepare-threads", type=int, default=None, help="default: 2 on CUDA")
    parser.add_argument("--breakdown", action="store_true", help="time each stage too")
    parser.add_argument("--repeat", type=int, default=3, help="end-to-end runs (median)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed raw model calls")
    parser.add_argument("--min-seconds", type=float, default=2.0, help="per raw measurement")
    parser.add_argument("--min-iters", type=int, default=3, help="per raw measurement")
    parser.add_argument("--time-budget", type=float, default=600.0, help="stop repeats after")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    args.t0 = time.perf_counter()
    if not args.random_init and args.pretrained is None:
        parser.error("pass --random-init (no downloads here) or --pretrained")
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True

    low, _, high = args.sides.partition(",")
    sides = (int(low), int(high or low))
    unique = synthetic_jpegs(min(args.unique, args.n), sides=sides)
    jpegs = [unique[i % len(unique)] for i in range(args.n)]
    report: dict[str, Any] = {
        "env": environment(),
        "jpegs": {
            "unique": len(unique),
            "side_px": f"{sides[0]}-{sides[1]}",
            "quality": 90,
            "mean_kb": round(float(np.mean([len(j) for j in unique])) / 1024, 1),
        },
        "results": [],
    }
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        if time.perf_counter() - args.t0 > args.time_budget:
            report["results"].append({"model": model, "skipped": "time budget spent"})
            continue
        try:
            report["results"].append(bench_model(model, jpegs, args))
        except Exception as exc:  # keep the other models' figures
            report["results"].append(
                {"model": model, "error": repr(exc), "traceback": traceback.format_exc()[-2000:]}
            )
        if args.out is not None:
            args.out.write_text(json.dumps(report, indent=2))
    report["total_seconds"] = round(time.perf_counter() - args.t0, 1)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
