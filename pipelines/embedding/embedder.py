"""OpenCLIP image and text embeddings, batched, bf16 on CUDA, decode overlapped with the model.

Images flow through a two-stage pipeline: :class:`BatchPreparer` threads decode, resize and
normalise the next batches on side CUDA streams while the calling thread runs the model on
the current one, and vectors are copied back to the host one batch late.

Measured on an H200 (bench/embed.py --breakdown, ViT-B-32, batches of 1,024): with
torchvision's nvJPEG decoder the two stages do not overlap. It holds a process-wide lock
for the whole call and decodes on a pool stream behind the model's kernels, so one decode
call takes 252 ms instead of 41 ms and end to end is about the sum of the stages. Hence the
other decoders (``decoder="dali"`` or ``"nvimgcodec"``, see ``device_decoders.py``), which
decode on their own or the caller's stream; which is faster is for bench/embed.py to say.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import open_clip
import torch
import torch.nn.functional as F

from pipelines.embedding.batch_preparer import BatchPreparer, PreparedBatch, record_event
from pipelines.embedding.device_decoders import build_device_decoder, resolve_decoder
from pipelines.embedding.gpu_decode import PixelSpec
from pipelines.embedding.image_probe import DEFAULT_MAX_PIXELS, ImageItemError, ItemError
from pipelines.embedding.model_loading import configured_embedding_dim, load_open_clip

Precision = Literal["auto", "fp32", "bf16", "fp16"]
_AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class ImageEmbeddings:
    """Vectors for every input row (NaN rows where the item failed) and the failures."""

    vectors: np.ndarray
    errors: tuple[ItemError, ...]

    @property
    def ok(self) -> np.ndarray:
        """Boolean mask of the rows that hold a vector."""
        mask = np.ones(len(self.vectors), dtype=bool)
        mask[np.asarray([error.index for error in self.errors], dtype=np.intp)] = False
        return mask


class ClipEmbedder:
    """Embed images (JPEG/PNG bytes or PIL images) and texts with one open_clip model.

    Parameters
    ----------
    model : open_clip model name, e.g. ``"ViT-B-32"``.
    pretrained : open_clip pretrained tag (needs network once) or a local checkpoint path.
    device : ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
    precision : ``"auto"`` (bf16 autocast on CUDA, fp32 on CPU), ``"fp32"``, ``"bf16"``, ``"fp16"``.
    batch_size : images or texts per model call.
    random_init : build untrained weights; for tests and benchmarks only.
    max_pixels : refuse images with more pixels than this (decompression-bomb guard).
    decode_threads : PIL decode threads; defaults to the CPU count, at most 16.
    decoder : JPEG decoder for the device path: ``"auto"`` (DALI, else nvImageCodec, else
        torchvision on CUDA; PIL on CPU), ``"dali"``, ``"nvimgcodec"``, ``"torchvision"``
        (nvJPEG on CUDA; on CPU it exercises the same tensor code) or ``"pil"`` (PIL and
        open_clip's preprocess for everything). See ``device_decoders.py``.
    hw_decoder_load : share of each batch for the hardware JPEG engines (DALI, nvImageCodec).
    prepare_threads : batches prepared at once. Two on CUDA, so one batch decodes while the
        other thread's Python work runs.
    """

    def __init__(
        self,
        model: str = "ViT-B-32",
        pretrained: str | Path | None = None,
        *,
        device: str | torch.device = "auto",
        precision: Precision = "auto",
        batch_size: int = 256,
        random_init: bool = False,
        max_pixels: int = DEFAULT_MAX_PIXELS,
        decode_threads: int | None = None,
        decoder: str = "auto",
        hw_decoder_load: float = 0.75,
        prepare_threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_pixels < 1:
            raise ValueError(f"max_pixels must be at least 1, got {max_pixels}")
        if not 0.0 <= hw_decoder_load <= 1.0:
            raise ValueError(f"hw_decoder_load must be in [0, 1], got {hw_decoder_load}")
        self.device = _resolve_device(device)
        self.precision = _resolve_precision(precision, self.device)
        self.model_name = model
        self.batch_size = batch_size
        self.max_pixels = max_pixels
        clip: Any
        clip, self._preprocess = load_open_clip(model, pretrained, random_init=random_init)
        self._cuda = self.device.type == "cuda"
        if self._cuda:
            clip = clip.to(memory_format=torch.channels_last)
        self._model: Any = clip.to(self.device)
        self._tokenizer = open_clip.get_tokenizer(model)
        self._autocast_dtype = _AUTOCAST_DTYPES.get(self.precision)
        self.pixel_dtype = self._autocast_dtype or torch.float32
        self.pixel_spec = PixelSpec.from_preprocess_cfg(clip.visual.preprocess_cfg)
        self._preparer = BatchPreparer(
            device=self.device,
            preprocess=self._preprocess,
            device_decoder=None,
            pixel_dtype=self.pixel_dtype,
            max_pixels=max_pixels,
            decode_threads=decode_threads or min(16, os.cpu_count() or 1),
            prepare_threads=prepare_threads or (2 if self._cuda else 1),
        )
        self._hw_decoder_load = hw_decoder_load
        self.decoder = "pil"
        self.use_decoder(decoder)
        self.dim = configured_embedding_dim(model) or self.embed_texts([""]).shape[1]
        if self._cuda:
            torch.cuda.synchronize(self.device)

    # -- public API ----------------------------------------------------------------------

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 text embeddings, shape ``(len(texts), dim)``."""
        texts = list(texts)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"text item {index} is {type(text).__name__}, expected str")
        chunks = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                tokens = self._tokenizer(texts[start : start + self.batch_size])
                with self._autocast():
                    features = self._model.encode_text(tokens.to(self.device))
                chunks.append(F.normalize(features.float(), dim=-1).cpu().numpy())
        if not chunks:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32, copy=False)

    @overload
    def embed_images(
        self, items: Iterable[object], *, errors: Literal["raise"] = "raise"
    ) -> np.ndarray: ...

    @overload
    def embed_images(
        self, items: Iterable[object], *, errors: Literal["return"]
    ) -> ImageEmbeddings: ...

    def embed_images(
        self, items: Iterable[object], *, errors: Literal["raise", "return"] = "raise"
    ) -> np.ndarray | ImageEmbeddings:
        """L2-normalised float32 image embeddings, shape ``(len(items), dim)``.

        With ``errors="raise"`` the first bad item raises :class:`ImageItemError`. With
        ``errors="return"`` bad items leave NaN rows and are listed as ``(index, message)``
        in :attr:`ImageEmbeddings.errors`; the other items are embedded normally.
        """
        if errors not in ("raise", "return"):
            raise ValueError(f"errors must be 'raise' or 'return', got {errors!r}")
        items = list(items)
        vectors = np.full((len(items), self.dim), np.nan, dtype=np.float32)
        failures: dict[int, str] = {}
        pending: tuple[list[int], torch.Tensor, torch.cuda.Event | None] | None = None
        with torch.inference_mode():
            batches = self._preparer.batches(items, self.batch_size)
            try:
                for prepared in batches:
                    failures.update(prepared.failures)
                    if failures and errors == "raise":
                        break
                    if prepared.pixels is None:
                        continue
                    features = self._encode_prepared(prepared)
                    # Copy back one batch late so the model is queued before the host waits.
                    host = features.to("cpu", non_blocking=self._cuda)
                    done = record_event(self._cuda)
                    if pending is not None:
                        _store(vectors, *pending)
                    pending = (prepared.rows, host, done)
                if pending is not None:
                    _store(vectors, *pending)
            finally:
                batches.close()
        if errors == "raise":
            if failures:
                index = min(failures)
                raise ImageItemError(index, failures[index])
            return vectors
        return ImageEmbeddings(
            vectors, tuple(ItemError(i, message) for i, message in sorted(failures.items()))
        )

    def use_decoder(self, decoder: str) -> None:
        """Switch the JPEG decoder of the device path (see the ``decoder`` parameter).

        Raises ``ValueError`` when it cannot run here. Not thread-safe against a running
        :meth:`embed_images`; benchmarks switch between runs to compare decoders on one model.
        """
        name = resolve_decoder(decoder, cuda=self._cuda)
        if self.pixel_spec is None and name != "pil":
            if decoder != "auto":
                raise ValueError(
                    f"{self.model_name}'s preprocess cannot be mirrored on the device; "
                    "use decoder='pil'"
                )
            name = "pil"
        self._preparer.device_decoder = (
            None
            if self.pixel_spec is None
            else build_device_decoder(
                name,
                self.device,
                self.pixel_spec,
                max_batch=self.batch_size,
                hw_decoder_load=self._hw_decoder_load,
            )
        )
        self.decoder = name

    @property
    def decode_on_device(self) -> bool:
        """Whether JPEGs the probe passes are decoded on the device (any decoder but PIL)."""
        return self._preparer.device_decoder is not None

    def encode_pixel_batch(self, pixels: torch.Tensor) -> torch.Tensor:
        """Model only: normalised ``(n, 3, S, S)`` pixels on the device to unit vectors."""
        with torch.inference_mode(), self._autocast():
            features = self._model.encode_image(pixels)
        return F.normalize(features.float(), dim=-1)

    def close(self) -> None:
        """Stop the decode threads."""
        self._preparer.close()

    def __enter__(self) -> ClipEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline -----------------------------------------------------------------------

    def _autocast(self) -> contextlib.AbstractContextManager[object]:
        if self._autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self._autocast_dtype)

    def _encode_prepared(self, prepared: PreparedBatch) -> torch.Tensor:
        pixels = prepared.pixels
        assert pixels is not None
        if prepared.ready is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(prepared.ready)
            # The pixels were allocated on the side stream; keep them until this one is done.
            pixels.record_stream(stream)
        return self.encode_pixel_batch(pixels)


def _store(
    vectors: np.ndarray, rows: list[int], host: torch.Tensor, done: torch.cuda.Event | None
) -> None:
    if done is not None:
        done.synchronize()
    vectors[rows] = host.numpy()


def _resolve_device(device: str | torch.device) -> torch.device:
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r} requested but CUDA is not available")
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:N]', got {str(device)!r}")
    return resolved


def _resolve_precision(precision: str, device: torch.device) -> str:
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    if precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"precision must be 'auto', 'fp32', 'bf16' or 'fp16', got {precision!r}")
    return precision
