"""Build an open_clip model with an explicit weights policy.

An embedding service that silently falls back to random weights produces vectors that look
fine and mean nothing, so no weights is an error unless random init is asked for by name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import open_clip
import torch

_CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".ckpt")
_SCHEMAS = ("hf-hub:", "local-dir:")

NO_WEIGHTS_MESSAGE = (
    "ClipEmbedder({model!r}) has no weights: pass pretrained=<open_clip pretrained tag> "
    "(downloads once, needs network; tags for this model: {tags}) or "
    "pretrained=<path to a local open_clip checkpoint (.pt, .bin or .safetensors)>. "
    "random_init=True builds untrained weights and is meant for tests and benchmarks only."
)


def load_open_clip(
    model: str, pretrained: str | Path | None, *, random_init: bool
) -> tuple[torch.nn.Module, Callable[[Any], torch.Tensor]]:
    """Return ``(model, eval_preprocess)`` on CPU in eval mode.

    Raises ``ValueError`` for an unknown model, missing weights, a checkpoint path that
    does not exist, or an unknown pretrained tag.
    """
    has_schema = model.startswith(_SCHEMAS)
    if not has_schema and model not in open_clip.list_models():
        raise ValueError(
            f"unknown open_clip model {model!r}; open_clip.list_models() lists the known names"
        )
    if random_init and pretrained is not None:
        raise ValueError("pass either pretrained=... or random_init=True, not both")
    if pretrained is None and not random_init and not has_schema:
        tags = ", ".join(open_clip.list_pretrained_tags_by_model(model)) or "none"
        raise ValueError(NO_WEIGHTS_MESSAGE.format(model=model, tags=tags))
    weights = None if pretrained is None else _resolve_weights(model, pretrained)
    clip, _, preprocess = open_clip.create_model_and_transforms(model, pretrained=weights)
    clip.eval().requires_grad_(False)
    return clip, preprocess


def _resolve_weights(model: str, pretrained: str | Path) -> str:
    path = Path(pretrained).expanduser()
    if path.is_file():
        return str(path)
    text = str(pretrained)
    if isinstance(pretrained, Path) or "/" in text or text.endswith(_CHECKPOINT_SUFFIXES):
        raise ValueError(f"checkpoint file {text!r} for {model} does not exist")
    tags = open_clip.list_pretrained_tags_by_model(model)
    if text not in tags:
        raise ValueError(
            f"{text!r} is neither a checkpoint file nor an open_clip pretrained tag for "
            f"{model}; known tags: {', '.join(tags) or 'none'}"
        )
    return text


def configured_embedding_dim(model: str) -> int | None:
    """Width of the joint embedding space from the model config, when the name has one."""
    config = open_clip.get_model_config(model)
    if config and "embed_dim" in config:
        return int(config["embed_dim"])
    return None
