"""k-center selection: exact greedy picks on both backends, diversity, priorities, input checks."""

from __future__ import annotations

import numpy as np
import pytest

from detectors.active_learning import select_for_active_learning


def naive_kcenter(
    x: np.ndarray, budget: int, anchors: np.ndarray, weights: np.ndarray | None = None
) -> list[int]:
    """Textbook k-center greedy in float64: argmax of weighted distance, one pick at a time."""
    d = np.sqrt(((x[:, None, :] - anchors[None, :, :]) ** 2).sum(-1)).min(axis=1)
    w = np.ones(len(x)) if weights is None else weights
    picks = []
    for _ in range(budget):
        j = int(np.argmax(d * w))
        picks.append(j)
        d = np.minimum(d, np.sqrt(((x - x[j]) ** 2).sum(-1)))
    return picks


def clustered_pool(seed: int, n_clusters: int = 12, per_cluster: int = 80, dim: int = 16):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_clusters, dim)) * 4.0
    labels = np.repeat(np.arange(n_clusters), per_cluster)
    spread = rng.uniform(0.2, 1.0, size=n_clusters)[labels, None]
    return centers[labels] + rng.normal(size=(len(labels), dim)) * spread, labels


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("with_reference", [False, True])
def test_picks_equal_textbook_greedy(backend: str, with_reference: bool) -> None:
    if backend == "torch":
        pytest.importorskip("torch")
    x, _ = clustered_pool(0)
    rng = np.random.default_rng(1)
    reference = rng.normal(size=(300, 16)) * 4.0 if with_reference else None
    anchors = x.mean(axis=0, keepdims=True) if reference is None else reference
    sel = select_for_active_learning(x, 40, reference=reference, backend=backend)
    assert sel.indices.tolist() == naive_kcenter(x, 40, anchors)
    d_final = np.sqrt(((x[:, None] - np.vstack([anchors, x[sel.indices]])[None]) ** 2).sum(-1))
    assert sel.coverage_radius == pytest.approx(d_final.min(axis=1).max(), rel=1e-4)
    assert np.all(np.diff(sel.novelty) <= 1e-4)  # unweighted greedy: novelty never rises


def test_numpy_and_torch_agree_with_labeled_and_priority() -> None:
    pytest.importorskip("torch")
    x, _ = clustered_pool(2, n_clusters=20, per_cluster=100, dim=32)
    rng = np.random.default_rng(3)
    kwargs = {"labeled": x[:50] + 0.01, "priority": rng.uniform(0.5, 2.0, size=len(x))}
    a = select_for_active_learning(x, 60, backend="numpy", **kwargs)
    b = select_for_active_learning(x, 60, backend="torch", **kwargs)
    assert a.indices.tolist() == b.indices.tolist()
    np.testing.assert_allclose(a.novelty, b.novelty, rtol=1e-4)
    assert a.coverage_radius == pytest.approx(b.coverage_radius, rel=1e-4)
    assert a.indices.tolist() == naive_kcenter(
        x, 60, np.vstack([x[:50] + 0.01]), kwargs["priority"]
    )


def test_beats_top_k_least_similar_on_clustered_data() -> None:
    # Embeddings share a common direction (8·e0); one tight blob of 100 near-duplicates
    # points elsewhere. The naive "k least similar to the centroid" pick spends its whole
    # budget on the duplicates; k-center takes one of them and covers the clusters.
    x, labels = clustered_pool(4)
    rng = np.random.default_rng(5)
    x = x * 0.4 + np.eye(16)[0] * 8.0
    outlier_blob = rng.normal(size=(100, 16)) * 0.05 + np.eye(16)[1] * 6.0
    pool = np.vstack([x, outlier_blob])
    budget = 15
    sel = select_for_active_learning(pool, budget, backend="numpy")

    unit = pool / np.linalg.norm(pool, axis=1, keepdims=True)
    centroid = unit.mean(axis=0)
    top_k = np.argsort(unit @ centroid / np.linalg.norm(centroid))[:budget]

    def radius(picks: np.ndarray) -> float:
        anchors = np.vstack([pool.mean(axis=0, keepdims=True), pool[picks]])
        return float(np.sqrt(((pool[:, None] - anchors[None]) ** 2).sum(-1)).min(axis=1).max())

    def min_pairwise(picks: np.ndarray) -> float:
        p = pool[picks]
        d = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
        return float(d[np.triu_indices(len(p), 1)].min())

    assert radius(sel.indices) < 0.5 * radius(top_k)
    assert min_pairwise(sel.indices) > 1.0  # no near-duplicates
    assert min_pairwise(top_k) < 0.5  # the naive pick is full of them
    all_labels = np.r_[labels, np.full(100, -1)]
    assert np.count_nonzero(all_labels[sel.indices] == -1) == 1  # one pick from the blob
    assert np.all(all_labels[top_k] == -1)


def test_reference_points_are_not_novel() -> None:
    x, _ = clustered_pool(6)
    reference = x[:400]  # clusters 0..4 already covered
    sel = select_for_active_learning(x, 7, reference=reference, backend="numpy")
    assert sel.indices.min() >= 400
    assert len({int(i) // 80 for i in sel.indices}) == 7  # clusters 5..11


def test_priority_boosts_flagged_windows() -> None:
    x, labels = clustered_pool(7)
    boosted = (labels == 3).astype(float) * 9.0 + 1.0
    plain = select_for_active_learning(x, 5, backend="numpy")
    prioritised = select_for_active_learning(x, 5, priority=boosted, backend="numpy")
    assert labels[prioritised.indices[0]] == 3
    assert np.count_nonzero(labels[plain.indices] == 3) <= 1


def test_deterministic_and_edge_budgets() -> None:
    x, _ = clustered_pool(8, n_clusters=3, per_cluster=10)
    a = select_for_active_learning(x, 30, backend="numpy")
    assert sorted(a.indices.tolist()) == list(range(30))
    assert a.coverage_radius == 0.0
    assert a.indices.tolist() == select_for_active_learning(x, 30, backend="numpy").indices.tolist()
    empty = select_for_active_learning(x, 0, backend="numpy")
    assert empty.indices.size == 0 and empty.coverage_radius > 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"candidates": np.full((4, 3), np.nan), "budget": 1}, "NaN"),
        ({"candidates": np.zeros((0, 3)), "budget": 0}, "at least 1"),
        ({"candidates": np.zeros((4, 3)), "budget": 5}, "exceeds"),
        ({"candidates": np.zeros((4, 3)), "budget": -1}, "non-negative"),
        ({"candidates": np.zeros((4, 3)), "budget": 1, "reference": np.zeros((2, 2))}, "dimension"),
        ({"candidates": np.zeros((4, 3)), "budget": 1, "labeled": np.zeros((2, 3, 1))}, "2-D"),
        ({"candidates": np.zeros((4, 3)), "budget": 1, "priority": [1.0, 2.0]}, "priority"),
        ({"candidates": np.zeros((4, 3)), "budget": 1, "priority": [1, 1, -1, 1]}, "priority"),
        ({"candidates": np.zeros((4, 3)), "budget": 1, "backend": "cupy"}, "backend"),
    ],
)
def test_bad_input_raises(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        select_for_active_learning(**kwargs)  # type: ignore[arg-type]
