"""Text embedding throughput: MiniLM (and the open_clip text tower) by batch size.

    .venv/bin/python bench/text_embed.py --device cpu --n 512 --batch-sizes 16,64,256

Prints JSON with texts/s per batch size for each text embedder. The texts are seeded
agent-log-like sentences of 6 to 60 words, so batches pad as real ones do.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pipelines.embedding.text import MiniLMEmbedder  # noqa: E402

_WORDS = (
    "agent tool call returned error timeout retry user asked refund order invoice total "
    "search results page summary plan step failed succeeded parse json schema field missing "
    "the a of to in for with on at by from and or but not then after before because"
).split()


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(6, 61, size=n)
    return [" ".join(rng.choice(_WORDS, size=int(length))) for length in lengths]


def texts_per_second(embedder: Any, texts: Sequence[str], batch_sizes: Sequence[int]) -> dict:
    """texts/s for each batch size (one warm-up batch first); ``embedder.batch_size`` is set."""
    rates: dict[str, float] = {}
    for batch_size in batch_sizes:
        embedder.batch_size = batch_size
        embedder.embed_texts(list(texts[:batch_size]))
        start = time.perf_counter()
        vectors = embedder.embed_texts(list(texts))
        seconds = time.perf_counter() - start  # vectors are numpy on the host: synced
        assert vectors.shape[0] == len(texts) and np.isfinite(vectors).all()
        rates[str(batch_size)] = round(len(texts) / seconds, 1)
    return rates


def text_throughput(
    *, device: str, n: int, batch_sizes: Sequence[int], clip_embedder: Any | None = None
) -> dict[str, Any]:
    texts = synthetic_texts(n)
    report: dict[str, Any] = {
        "n": n,
        "mean_words": round(float(np.mean([len(t.split()) for t in texts])), 1),
    }
    try:
        minilm = MiniLMEmbedder(device=device)
        report["minilm"] = {
            "device": minilm.device.type,
            "precision": minilm.precision,
            "texts_per_s": texts_per_second(minilm, texts, batch_sizes),
        }
    except Exception as exc:  # noqa: BLE001  report, and keep the other figures
        report["minilm"] = {"error": repr(exc)}
    if clip_embedder is not None:
        original = clip_embedder.batch_size
        try:
            report["clip_text"] = {
                "model": clip_embedder.model_name,
                "device": clip_embedder.device.type,
                "precision": clip_embedder.precision,
                "texts_per_s": texts_per_second(clip_embedder, texts, batch_sizes),
            }
        finally:
            clip_embedder.batch_size = original
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--batch-sizes", default="16,64,256")
    args = parser.parse_args()
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    print(json.dumps(text_throughput(device=args.device, n=args.n, batch_sizes=sizes), indent=2))


if __name__ == "__main__":
    main()
