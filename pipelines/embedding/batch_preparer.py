"""Image items to device-ready pixel batches, in background threads, ahead of the model.

A prepare thread probes a slice of items, hands the JPEGs the probe passed to the device
decoder (DALI, nvImageCodec or torchvision: ``device_decoders.py``), which decodes,
resizes and normalises them on the device, and everything else to PIL in a thread pool,
all on its own side CUDA stream; a CUDA event marks the batch ready. Two prepare threads
on CUDA keep one batch decoding while the other's Python work runs (the decoders release
the GIL).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from pipelines.embedding.cpu_decode import Preprocess, collect_decodes, submit_pil_decodes
from pipelines.embedding.device_pixels import DeviceDecoder
from pipelines.embedding.image_probe import ImageProbe, ImageRejected, probe_image


@dataclass
class PreparedBatch:
    """Normalised pixels for the good items of one slice, and why the others failed."""

    rows: list[int]  # input index of each pixel row
    pixels: torch.Tensor | None
    ready: torch.cuda.Event | None  # recorded on the side stream after the last write
    failures: dict[int, str] = field(default_factory=dict)


class BatchPreparer:
    """Decode, resize and normalise slices of image items in background threads."""

    def __init__(
        self,
        *,
        device: torch.device,
        preprocess: Preprocess,
        device_decoder: DeviceDecoder | None,
        pixel_dtype: torch.dtype,
        max_pixels: int,
        decode_threads: int,
        prepare_threads: int,
    ) -> None:
        self.device = device
        self._cuda = device.type == "cuda"
        self._preprocess = preprocess
        self.device_decoder = device_decoder
        self._pixel_dtype = pixel_dtype
        self.max_pixels = max_pixels
        self.prepare_threads = prepare_threads
        self._decode_pool = ThreadPoolExecutor(decode_threads, thread_name_prefix="telltale-decode")
        self._prepare_pool = ThreadPoolExecutor(
            prepare_threads, thread_name_prefix="telltale-prepare"
        )
        self._thread_state = threading.local()  # one side CUDA stream per prepare thread

    def close(self) -> None:
        self._prepare_pool.shutdown(wait=True)
        self._decode_pool.shutdown(wait=True)

    def batches(
        self, items: Sequence[object], batch_size: int
    ) -> Generator[PreparedBatch, None, None]:
        """Yield prepared batches in order, keeping every prepare thread busy plus one ready."""
        starts = iter(range(0, len(items), batch_size))
        queue: deque[Future[PreparedBatch]] = deque()

        def submit(start: int) -> None:
            stop = min(start + batch_size, len(items))
            queue.append(self._prepare_pool.submit(self._prepare, items, start, stop))

        for start in itertools.islice(starts, self.prepare_threads + 1):
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

    def _prepare(self, items: Sequence[object], start: int, stop: int) -> PreparedBatch:
        """Probe, decode, resize and normalise ``items[start:stop]`` (runs in the prepare thread)."""
        with torch.inference_mode(), self._side_stream_context():
            failures: dict[int, str] = {}
            device_rows: list[int] = []
            pil_rows: list[int] = []
            probes: dict[int, ImageProbe] = {}
            # On this thread: spread over the decode pool (64-item chunks on 16 threads of an
            # H200's host) the probes halved the prepared batches per second (GIL contention).
            for index in range(start, stop):
                try:
                    probes[index] = probe = probe_image(
                        items[index],
                        max_pixels=self.max_pixels,
                        for_device=self.device_decoder is not None,
                    )
                except ImageRejected as exc:
                    failures[index] = str(exc)
                    continue
                (device_rows if probe.device_decodable else pil_rows).append(index)
            pil_futures = self._submit_pil(items, pil_rows, probes)
            parts: list[torch.Tensor] = []
            rows: list[int] = []
            if device_rows:
                assert self.device_decoder is not None
                decoded = self.device_decoder.decode_resize(
                    [items[i] for i in device_rows],  # type: ignore[misc]
                    [probes[i] for i in device_rows],
                )
                # The device decoder refused these; PIL either reads them or says why not.
                refused = [device_rows[position] for position in sorted(decoded.refused)]
                pil_rows += refused
                pil_futures += self._submit_pil(items, refused, probes)
                if decoded.pixels is not None:
                    parts.append(decoded.pixels)
                    rows.extend(device_rows[position] for position in decoded.positions)
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
                return PreparedBatch(rows, None, None, failures)
            batch = parts[0] if len(parts) == 1 else torch.cat(parts)
            memory_format = torch.channels_last if self._cuda else torch.contiguous_format
            batch = batch.to(dtype=self._pixel_dtype, memory_format=memory_format)
            return PreparedBatch(rows, batch, record_event(self._cuda), failures)

    def _side_stream_context(self) -> contextlib.AbstractContextManager[object]:
        if not self._cuda:
            return contextlib.nullcontext()
        stream = getattr(self._thread_state, "stream", None)
        if stream is None:
            # High priority: the decode's many small kernels are otherwise queued behind
            # the model's, and a batch's decode took 3-10x longer while the model ran.
            stream = self._thread_state.stream = torch.cuda.Stream(self.device, priority=-1)
        return torch.cuda.stream(stream)

    def _submit_pil(
        self, items: Sequence[object], rows: list[int], probes: dict[int, ImageProbe]
    ) -> list[Future[torch.Tensor]]:
        return submit_pil_decodes(
            self._decode_pool, [items[i] for i in rows], [probes[i] for i in rows], self._preprocess
        )


def record_event(cuda: bool) -> torch.cuda.Event | None:
    if not cuda:
        return None
    event = torch.cuda.Event()
    event.record()
    return event
