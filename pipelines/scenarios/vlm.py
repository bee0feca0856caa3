"""The ``vlm.image`` embedding stream: image embeddings of a VLM service, with no traces.

Clean images are ``normalize(common + 0.8 * cluster_k + 0.5 * noise)``: a shared component
(CLIP-style embeddings sit in a narrow cone) plus one of eight content clusters (the kinds of
picture users send). FM-6 drifts it silently: a share of images comes from a new cluster
and every image moves along a fixed direction (a mean shift, e.g. a new camera), while
nothing in the traces changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pipelines.scenarios.convert import iso
from pipelines.scenarios.injections import Injection, effects_at
from pipelines.scenarios.profiles import stable_int

IMAGE_STREAM = "vlm.image"
IMAGE_MODEL = "ViT-B-32"
N_CLUSTERS, CLUSTER_WEIGHT, NOISE = 8, 0.8, 0.5


def image_vectors(
    seed: int,
    t_start: float,
    duration_s: float,
    images_per_hour: float,
    dim: int,
    injections: Sequence[Injection] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Times (epoch s, sorted) and unit vectors (float32) of the image stream."""
    times, vecs, _, _ = image_draws(seed, t_start, duration_s, images_per_hour, dim, injections)
    return times, vecs


def image_draws(
    seed: int,
    t_start: float,
    duration_s: float,
    images_per_hour: float,
    dim: int,
    injections: Sequence[Injection] = (),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Times, vectors, and what each image shows: its cluster (``N_CLUSTERS`` is the new
    one FM-6 brings) and its shift along the new camera's direction. The demo draws a
    picture of each from the last two (:mod:`app.demo.pictures`)."""
    rng = np.random.default_rng(stable_int("images", seed))
    n = int(rng.poisson(images_per_hour * duration_s / 3600.0))
    times = np.sort(rng.uniform(0.0, duration_s, n)) + t_start
    dirs = rng.standard_normal((N_CLUSTERS + 3, dim))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    # Rows: the eight clusters, the new cluster, the common component, the shift direction.
    clusters, common, shift_dir = dirs[: N_CLUSTERS + 1], dirs[N_CLUSTERS + 1], dirs[-1]
    which = rng.integers(0, N_CLUSTERS, n)
    u_new = rng.random(n)
    noise = rng.standard_normal((n, dim)) / np.sqrt(dim)
    new_cluster = np.zeros(n)
    shift = np.zeros(n)
    if injections:
        for k, t in enumerate(times.tolist()):
            eff = effects_at(injections, t)
            new_cluster[k], shift[k] = eff.image_new_cluster, eff.image_shift
    which = np.where(u_new < new_cluster, N_CLUSTERS, which)
    vecs = common + CLUSTER_WEIGHT * clusters[which] + NOISE * noise + shift[:, None] * shift_dir
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return times, vecs.astype(np.float32), which, shift


def image_events(
    seed: int,
    prefix: str,
    t_start: float,
    duration_s: float,
    images_per_hour: float,
    dim: int,
    injections: Sequence[Injection] = (),
) -> list[dict[str, Any]]:
    times, vecs = image_vectors(seed, t_start, duration_s, images_per_hour, dim, injections)
    return [
        {
            "id": f"{prefix}-img{k:05d}",
            "type": "embedding",
            "body": {
                "stream": IMAGE_STREAM,
                "model": IMAGE_MODEL,
                "vector": vec,
                "sample_id": f"{prefix}-img{k:05d}",
                "created_at": iso(t),
            },
        }
        for k, (t, vec) in enumerate(zip(times.tolist(), vecs.tolist(), strict=True))
    ]
