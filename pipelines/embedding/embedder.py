"""OpenCLIP image and text embeddings, batched, bf16 on CUDA, decode overlapped with the model.

Images flow through a two-stage pipeline. A prepare thread probes a batch, decodes its
baseline JPEGs on the device (nvJPEG) and everything else with PIL in a thread pool, and
resizes and normalises on the device, all on a side CUDA stream. The calling thread runs
the model on the previous batch meanwhile, and copies vectors back to the host one batch
late, so neither the decoder nor the model waits on the other.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections import deque
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import open_clip
import torch
import torch.nn.functional as F

from pipelines.embedding.cpu_decode import collect_decodes, submit_pil_decodes
from pipelines.embedding.gpu_decode import (
    PixelSpec,
    decode_jpegs,
    normalization_constants,
    normalize,
    resize_center_crop,
)
from pipelines.embedding.image_probe import (
    DEFAULT_MAX_PIXELS,
    ImageItemError,
    ImageProbe,
    ImageRejected,
    ItemError,
    probe_image,
)
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


@dataclass
class _PreparedBatch:
    rows: list[int]
    pixels: torch.Tensor | None
    ready: torch.cuda.Event | None
    failures: dict[int, str] = field(default_factory=dict)


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
    decode_on_device : decode JPEGs with ``torchvision.io.decode_jpeg`` on the model's device
        and resize there; defaults to True on CUDA. On CPU it exercises the same code path.
    prepare_threads : batches prepared at once. Two on CUDA, so one thread's Python resize
        loop runs while the other waits on nvJPEG (which releases the GIL).
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
        decode_on_device: bool | None = None,
        prepare_threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_pixels < 1:
            raise ValueError(f"max_pixels must be at least 1, got {max_pixels}")
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
        self.pixel_spec = PixelSpec.from_preprocess_cfg(clip.visual.preprocess_cfg)
        on_device = self._cuda if decode_on_device is None else decode_on_device
        self.decode_on_device = on_device and self.pixel_spec is not None
        if self.pixel_spec is not None:
            self._scale, self._shift = normalization_constants(self.pixel_spec, self.device)
        self._pixel_dtype = self._autocast_dtype or torch.float32
        threads = decode_threads or min(16, os.cpu_count() or 1)
        self._decode_pool = ThreadPoolExecutor(threads, thread_name_prefix="telltale-decode")
        self._prepare_threads = prepare_threads or (2 if self._cuda else 1)
        self._prepare_pool = ThreadPoolExecutor(
            self._prepare_threads, thread_name_prefix="telltale-prepare"
        )
        self._thread_state = threading.local()  # one side CUDA stream per prepare thread
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
            batches = self._prepared_batches(items)
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
                    done = _record_event(self._cuda)
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

    def encode_pixel_batch(self, pixels: torch.Tensor) -> torch.Tensor:
        """Model only: normalised ``(n, 3, S, S)`` pixels on the device to unit vectors."""
        with torch.inference_mode(), self._autocast():
            features = self._model.encode_image(pixels)
        return F.normalize(features.float(), dim=-1)

    def close(self) -> None:
        """Stop the decode threads."""
        self._prepare_pool.shutdown(wait=True)
        self._decode_pool.shutdown(wait=True)

    def __enter__(self) -> ClipEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline -----------------------------------------------------------------------

    def _autocast(self) -> contextlib.AbstractContextManager[object]:
        if self._autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self._autocast_dtype)

    def _prepared_batches(self, items: Sequence[object]) -> Generator[_PreparedBatch, None, None]:
        """Yield prepared batches in order, keeping every prepare thread busy plus one ready."""
        starts = iter(range(0, len(items), self.batch_size))
        queue: deque[Future[_PreparedBatch]] = deque()

        def submit(start: int) -> None:
            stop = min(start + self.batch_size, len(items))
            queue.append(self._prepare_pool.submit(self._prepare, items, start, stop))

        for start in itertools.islice(starts, self._prepare_threads + 1):
            submit(start)
        try:
            while queue:
                prepared = queue.popleft().result()
                following = next(starts, None)
                if following is not None:
                    submit(following)
                yield prepared
        finally:
            for future in queue:
                future.cancel()
            for future in queue:
                if not future.cancelled():
                    future.exception()  # let in-flight device work finish before returning

    def _encode_prepared(self, prepared: _PreparedBatch) -> torch.Tensor:
        pixels = prepared.pixels
        assert pixels is not None
        if prepared.ready is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(prepared.ready)
            # The pixels were allocated on the side stream; keep them until this one is done.
            pixels.record_stream(stream)
        return self.encode_pixel_batch(pixels)

    def _prepare(self, items: Sequence[object], start: int, stop: int) -> _PreparedBatch:
        """Probe, decode, resize and normalise ``items[start:stop]`` (runs in the prepare thread)."""
        with torch.inference_mode(), self._side_stream_context():
            failures: dict[int, str] = {}
            device_rows: list[int] = []
            pil_rows: list[int] = []
            probes: dict[int, ImageProbe] = {}
            for index in range(start, stop):
                try:
                    probes[index] = probe = probe_image(items[index], max_pixels=self.max_pixels)
                except ImageRejected as exc:
                    failures[index] = str(exc)
                    continue
                (
                    device_rows if self.decode_on_device and probe.device_decodable else pil_rows
                ).append(index)
            pil_futures = self._submit_pil(items, pil_rows, probes)
            parts: list[torch.Tensor] = []
            rows: list[int] = []
            if device_rows:
                decoded = decode_jpegs([items[i] for i in device_rows], self.device)  # type: ignore[misc]
                images = [
                    (i, d)
                    for i, d in zip(device_rows, decoded, strict=True)
                    if not isinstance(d, str)
                ]
                # The device decoder refused these; PIL either reads them or says why not.
                refused = [
                    i for i, d in zip(device_rows, decoded, strict=True) if isinstance(d, str)
                ]
                pil_rows += refused
                pil_futures += self._submit_pil(items, refused, probes)
                if images:
                    assert self.pixel_spec is not None
                    pixels, order = resize_center_crop([d for _, d in images], self.pixel_spec)
                    parts.append(normalize(pixels, self._scale, self._shift))
                    rows.extend(images[position][0] for position in order)
            pil_pixels = []
            for index, result in zip(pil_rows, collect_decodes(pil_futures), strict=True):
                if isinstance(result, str):
                    failures[index] = result
                else:
                    pil_pixels.append(result)
                    rows.append(index)
            if pil_pixels:
                stacked = torch.stack(pil_pixels)
                if self._cuda:
                    stacked = stacked.pin_memory().to(self.device, non_blocking=True)
                parts.append(stacked)
            if not parts:
                return _PreparedBatch(rows, None, None, failures)
            batch = parts[0] if len(parts) == 1 else torch.cat(parts)
            memory_format = torch.channels_last if self._cuda else torch.contiguous_format
            batch = batch.to(dtype=self._pixel_dtype, memory_format=memory_format)
            return _PreparedBatch(rows, batch, _record_event(self._cuda), failures)

    def _side_stream_context(self) -> contextlib.AbstractContextManager[object]:
        if not self._cuda:
            return contextlib.nullcontext()
        stream = getattr(self._thread_state, "stream", None)
        if stream is None:
            stream = self._thread_state.stream = torch.cuda.Stream(self.device)
        return torch.cuda.stream(stream)

    def _submit_pil(
        self, items: Sequence[object], rows: list[int], probes: dict[int, ImageProbe]
    ) -> list[Future[torch.Tensor]]:
        return submit_pil_decodes(
            self._decode_pool, [items[i] for i in rows], [probes[i] for i in rows], self._preprocess
        )


def _record_event(cuda: bool) -> torch.cuda.Event | None:
    if not cuda:
        return None
    event = torch.cuda.Event()
    event.record()
    return event


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
