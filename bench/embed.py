"""Embedding throughput: every JPEG decoder side by side, the model alone, texts, k-center.

    .venv/bin/python bench/embed.py --device cpu --n 64 --batch-size 32 --random-init
    python3 bench/embed.py --device cuda --models ViT-B-32,ViT-L-14 --n 16384 \\
        --batch-size 1024 --random-init --text --kcenter --out embed.json

Prints one JSON object: ``env``; ``results``, one entry per model with ``raw_img_per_s``
(model only, on normalised tensors already on the device) and ``decoders``, one entry per
JPEG decoder (``--decoders``; default every one usable here: dali, nvimgcodec, torchvision,
pil) with ``prep_img_per_s`` (JPEG bytes to normalised tensors, no model),
``e2e_jpeg_img_per_s`` (JPEG bytes to L2-normalised numpy vectors, median of ``--repeat``),
``parity`` (cosine, in fp32, between the model's vectors for that decoder's pixels and for
PIL decode + open_clip preprocess, first 64 JPEGs; the bar is min >= 0.999) and with
``--breakdown`` each stage's milliseconds per batch, alone and beside the other; ``text``
(``--text``: MiniLM and the first model's text tower, texts/s by batch size); ``kcenter``
(``--kcenter``: seconds for ``--kcenter-k`` picks of ``--kcenter-n`` x ``--kcenter-d``,
float32 and float16, candidates resident on the device). Random init by default because
no weights can be downloaded here; throughput does not depend on the weights. The
synthetic JPEGs are smooth images with photo-like noise, each side 256-500 px, quality 90.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
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
from bench.embed_checks import breakdown, parity  # noqa: E402
from bench.kcenter import kcenter_timing  # noqa: E402
from bench.text_embed import text_throughput  # noqa: E402
from pipelines.embedding import ClipEmbedder  # noqa: E402
from pipelines.embedding.device_decoders import installed_backends  # noqa: E402
from pipelines.embedding.matrix_resize import PAD_ROUTES  # noqa: E402


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


def bench_decoder(embedder: ClipEmbedder, jpegs: list[bytes], args: argparse.Namespace) -> dict:
    """Decode alone, end to end and parity for the embedder's current decoder."""
    result: dict[str, Any] = {"decoder": embedder.decoder}
    started = time.perf_counter()
    try:
        embedder.embed_images(jpegs[: args.batch_size])  # warm up (DALI builds its pipelines)
        if args.breakdown and embedder.decode_on_device:
            result["breakdown"] = breakdown(embedder, jpegs)
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
    except Exception as exc:  # keep what was measured before the failure
        result["error"] = repr(exc)
        result["traceback"] = traceback.format_exc()[-2000:]
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def decoders_to_run(args: argparse.Namespace) -> list[str]:
    if args.decoders != "all":
        return [d.strip() for d in args.decoders.split(",") if d.strip()]
    if args.device != "cuda":
        return ["torchvision", "pil"]
    present = installed_backends()
    return [d for d in ("dali", "nvimgcodec") if d in present] + ["torchvision", "pil"]


def bench_model(model: str, jpegs: list[bytes], args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    embedder = ClipEmbedder(
        model,
        random_init=args.random_init,
        pretrained=args.pretrained,
        device=args.device,
        precision=args.precision,
        batch_size=args.batch_size,
        decoder="pil",
        hw_decoder_load=args.hw_decoder_load,
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
        "hw_decoder_load": args.hw_decoder_load,
        "prepare_threads": embedder._preparer.prepare_threads,
        "weights": "random_init" if args.random_init else str(args.pretrained),
        "decoders": {},
    }
    try:
        result["raw_img_per_s"] = round(raw_throughput(embedder, args), 1)
        for name in decoders_to_run(args):
            if time.perf_counter() - args.t0 > args.time_budget:
                result["decoders"][name] = {"skipped": "time budget spent"}
                continue
            try:
                embedder.use_decoder(name)
            except (ValueError, ImportError) as exc:
                result["decoders"][name] = {"error": repr(exc)}
                continue
            result["decoders"][name] = bench_decoder(embedder, jpegs, args)
        result["pad_routes"] = dict(PAD_ROUTES)  # nested padding, or one copy per image
        if embedder.device.type == "cuda":
            result["max_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if args.text and "text" not in args.report:
            args.report["text"] = text_throughput(
                device=args.device,
                n=args.text_n,
                batch_sizes=[int(b) for b in args.text_batch_sizes.split(",")],
                clip_embedder=embedder,
            )
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

    versions: dict[str, Any] = {}
    for name, module in (("dali", "nvidia.dali"), ("nvimgcodec", "nvidia.nvimgcodec")):
        try:
            versions[name] = __import__(module, fromlist=["__version__"]).__version__
        except Exception as exc:  # noqa: BLE001  not installed, or broken: say which
            versions[name] = f"unavailable: {type(exc).__name__}"
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "open_clip": open_clip.__version__,
        **versions,
        "cpu_count": os.cpu_count(),
        "cuda_available": torch.cuda.is_available(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--models", default="ViT-B-32", help="comma-separated open_clip names")
    parser.add_argument("--decoders", default="all", help="comma-separated, or all usable")
    parser.add_argument("--hw-decoder-load", type=float, default=0.75, help="DALI/nvImageCodec")
    parser.add_argument("--n", type=int, default=64, help="JPEGs per end-to-end run")
    parser.add_argument("--sides", default="256,500", help="MIN,MAX px per side of the JPEGs")
    parser.add_argument("--unique", type=int, default=1024, help="distinct JPEGs, cycled to n")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    parser.add_argument("--random-init", action="store_true", help="untrained weights")
    parser.add_argument("--pretrained", default=None, help="open_clip tag or checkpoint path")
    parser.add_argument("--prepare-threads", type=int, default=None, help="default: 2 on CUDA")
    parser.add_argument("--breakdown", action="store_true", help="time each stage too")
    parser.add_argument("--repeat", type=int, default=3, help="end-to-end runs (median)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed raw model calls")
    parser.add_argument("--min-seconds", type=float, default=2.0, help="per raw measurement")
    parser.add_argument("--min-iters", type=int, default=3, help="per raw measurement")
    parser.add_argument("--text", action="store_true", help="text embeddings, texts/s")
    parser.add_argument("--text-n", type=int, default=256, help="texts per measurement")
    parser.add_argument("--text-batch-sizes", default="16,64,256")
    parser.add_argument("--kcenter", action="store_true", help="k-center selection seconds")
    parser.add_argument("--kcenter-n", type=int, default=20_000)
    parser.add_argument("--kcenter-d", type=int, default=128)
    parser.add_argument("--kcenter-k", type=int, default=100)
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
    args.report = report

    def save() -> None:
        if args.out is not None:
            args.out.write_text(json.dumps(report, indent=2))

    if args.kcenter:  # first: it needs ~3 GB of device memory free, and minutes at most
        try:
            report["kcenter"] = kcenter_timing(
                n=args.kcenter_n,
                d=args.kcenter_d,
                k=args.kcenter_k,
                device=torch.device(args.device),
            )
        except Exception as exc:  # noqa: BLE001  keep the other figures
            report["kcenter"] = {"error": repr(exc), "traceback": traceback.format_exc()[-2000:]}
        if args.device == "cuda":
            torch.cuda.empty_cache()
        save()
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
        save()
    report["total_seconds"] = round(time.perf_counter() - args.t0, 1)
    save()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
