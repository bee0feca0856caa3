"""Fixtures for pipeline tests: a tiny random-init open_clip model and synthetic images."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import open_clip
import pytest
import torch

from pipelines.embedding import ClipEmbedder

TINY_MODEL = "telltale-tiny-test"
TINY_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Register a 2-layer, 64-px open_clip config so tests build a model in milliseconds."""
    if TINY_MODEL not in open_clip.list_models():
        path = tmp_path_factory.mktemp("open_clip") / f"{TINY_MODEL}.json"
        path.write_text(json.dumps(TINY_CONFIG))
        open_clip.add_model_config(path)
    return TINY_MODEL


@pytest.fixture(scope="session")
def make_embedder(tiny_model: str) -> Iterator[Callable[..., ClipEmbedder]]:
    """Build tiny CPU embedders with identical seeded weights; all are closed at the end."""
    built: list[ClipEmbedder] = []

    def make(**kwargs: object) -> ClipEmbedder:
        torch.manual_seed(0)
        options: dict[str, object] = {
            "random_init": True,
            "device": "cpu",
            "batch_size": 4,
            "decode_threads": 2,
        }
        options.update(kwargs)
        embedder = ClipEmbedder(tiny_model, **options)  # type: ignore[arg-type]
        built.append(embedder)
        return embedder

    yield make
    for embedder in built:
        embedder.close()


@pytest.fixture(scope="session")
def embedder(make_embedder: Callable[..., ClipEmbedder]) -> ClipEmbedder:
    return make_embedder()


@pytest.fixture
def write_checkpoint(tmp_path: Path) -> Callable[[ClipEmbedder], Path]:
    def write(embedder: ClipEmbedder) -> Path:
        path = tmp_path / "tiny.pt"
        torch.save(embedder._model.state_dict(), path)
        return path

    return write
