"""NVIDIA DALI backend: decode, resize, crop and normalise in one GPU pipeline.

``fn.decoders.image(device="mixed")`` splits each batch between the hardware JPEG engines
(``hw_decoder_load`` of the images; Hopper has seven engines) and CUDA decoding, on
DALI's own threads and stream, so it does not queue behind the model's kernels the way
torchvision's decoder does. Each prepare thread owns one pipeline, so two batches are in
flight while the model runs on a third.

The pipeline mirrors open_clip's eval preprocess exactly where it can: the resized size is
torchvision's ``Resize(S)`` size (given per image, not DALI's rounding of
``resize_shorter``), cubic or linear resampling antialiased when shrinking, output
rounded to uint8 as PIL does, the same centre-crop offset, then ``(x/255 - mean)/std``.
No EXIF rotation: PIL's ``Image.open`` does not rotate either.

A batch DALI fails on (a stream the probe passed but the decoder rejects) goes to the
fallback decoder, which isolates the bad items; the failed pipeline is rebuilt.

On a CPU device the same graph runs as a CPU-only pipeline (libjpeg-turbo decode). The
service never picks that (``resolve_decoder`` wants CUDA for DALI); it is how the graph's
geometry and normalisation are tested where there is no GPU.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pipelines.embedding.device_pixels import DeviceDecoder, DevicePixels
from pipelines.embedding.gpu_decode import BytesLike, PixelSpec, shortest_side_size
from pipelines.embedding.image_probe import ImageProbe

log = logging.getLogger(__name__)


def sample_arguments(
    probes: Sequence[ImageProbe], size: int
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per-image ``resize_x``, ``resize_y``, ``crop_pos_x``, ``crop_pos_y`` for the pipeline.

    The crop offset is torchvision's ``int(round((W - S) / 2))``; DALI computes
    ``pos * (W - S)`` and rounds or truncates by version, so ``pos`` carries a quarter
    pixel extra that both turn into the same integer.
    """

    def position(offset: int, extent: int) -> float:
        span = extent - size
        return 0.5 if span <= 0 else min(1.0, (offset + 0.25) / span)

    widths, heights, xs, ys = [], [], [], []
    for probe in probes:
        new_h, new_w = shortest_side_size(probe.height, probe.width, size)
        top = int(round((new_h - size) / 2.0))
        left = int(round((new_w - size) / 2.0))
        widths.append(np.float32(new_w))
        heights.append(np.float32(new_h))
        xs.append(np.float32(position(left, new_w)))
        ys.append(np.float32(position(top, new_h)))
    as_arrays = [
        [np.asarray(v, dtype=np.float32) for v in column] for column in (widths, heights, xs, ys)
    ]
    return as_arrays[0], as_arrays[1], as_arrays[2], as_arrays[3]


class DaliDecoder:
    """One DALI pipeline per prepare thread; JPEG bytes in, normalised CHW float32 out."""

    name = "dali"

    def __init__(
        self,
        device: torch.device,
        spec: PixelSpec,
        *,
        max_batch: int,
        hw_decoder_load: float = 0.75,
        fallback: DeviceDecoder,
        threads: int = 4,
    ) -> None:
        if not 0.0 <= hw_decoder_load <= 1.0:
            raise ValueError(f"hw_decoder_load must be in [0, 1], got {hw_decoder_load}")
        import nvidia.dali  # noqa: F401  (fail here, with the import error, not in a thread)

        self.device = device
        self._cuda = device.type == "cuda"
        self.device_index: int | None = None  # None: a CPU-only pipeline
        if self._cuda:
            self.device_index = (
                device.index if device.index is not None else torch.cuda.current_device()
            )
        self.spec = spec
        self.max_batch = max_batch
        self.hw_decoder_load = hw_decoder_load
        self.threads = threads
        self._fallback = fallback
        self._local = threading.local()

    def _build(self) -> Any:
        from nvidia.dali import fn, pipeline_def, types

        size, spec = self.spec.size, self.spec
        interp = types.INTERP_CUBIC if spec.interpolation == "bicubic" else types.INTERP_LINEAR

        @pipeline_def(  # type: ignore[misc]
            batch_size=self.max_batch,
            num_threads=self.threads,
            device_id=self.device_index,
            prefetch_queue_depth=1,
        )
        def graph() -> Any:
            jpegs = fn.external_source(name="jpegs", dtype=types.UINT8)
            widths = fn.external_source(name="widths", dtype=types.FLOAT)
            heights = fn.external_source(name="heights", dtype=types.FLOAT)
            crop_x = fn.external_source(name="crop_x", dtype=types.FLOAT)
            crop_y = fn.external_source(name="crop_y", dtype=types.FLOAT)
            hardware = {"hw_decoder_load": self.hw_decoder_load} if self._cuda else {}
            images = fn.decoders.image(
                jpegs,
                device="mixed" if self._cuda else "cpu",
                output_type=types.RGB,
                adjust_orientation=False,
                **hardware,
            )
            images = fn.resize(
                images, resize_x=widths, resize_y=heights, interp_type=interp, antialias=True
            )
            return fn.crop_mirror_normalize(
                images,
                crop=(size, size),
                crop_pos_x=crop_x,
                crop_pos_y=crop_y,
                mean=[255.0 * m for m in spec.mean],
                std=[255.0 * s for s in spec.std],
                dtype=types.FLOAT,
                output_layout="CHW",
            )

        pipe = graph()
        pipe.build()
        return pipe

    def decode_resize(
        self, datas: Sequence[BytesLike], probes: Sequence[ImageProbe]
    ) -> DevicePixels:
        if not datas:
            return DevicePixels(None, [])
        if len(datas) > self.max_batch:
            raise ValueError(f"batch of {len(datas)} over the pipeline's {self.max_batch}")
        state = self._local
        if getattr(state, "copied", None) is not None:
            state.copied.synchronize()  # the last copy out of DALI's buffers has finished
        try:
            if getattr(state, "pipe", None) is None:
                state.pipe = self._build()
            pixels = self._run(state.pipe, datas, probes)
        except Exception as exc:  # noqa: BLE001  a bad stream fails the whole DALI batch
            log.warning(
                "DALI failed on a batch of %d; using %s: %s", len(datas), self._fallback.name, exc
            )
            state.pipe = None  # a pipeline that raised is not reused
            state.copied = None
            return self._fallback.decode_resize(datas, probes)
        return DevicePixels(pixels, list(range(len(datas))))

    def _run(
        self, pipe: Any, datas: Sequence[BytesLike], probes: Sequence[ImageProbe]
    ) -> torch.Tensor:
        from nvidia.dali.plugin.pytorch import feed_ndarray

        widths, heights, crop_x, crop_y = sample_arguments(probes, self.spec.size)
        pipe.feed_input("jpegs", [np.frombuffer(d, dtype=np.uint8) for d in datas])
        pipe.feed_input("widths", widths)
        pipe.feed_input("heights", heights)
        pipe.feed_input("crop_x", crop_x)
        pipe.feed_input("crop_y", crop_y)
        (out,) = pipe.run()
        size = self.spec.size
        pixels = torch.empty((len(datas), 3, size, size), dtype=torch.float32, device=self.device)
        if not self._cuda:
            feed_ndarray(out.as_tensor(), pixels)
            return pixels
        stream = torch.cuda.current_stream(self.device)
        # DALI reuses its output buffers on the next run: copy out on this thread's stream
        # and wait for that copy before this pipeline runs again.
        feed_ndarray(out.as_tensor(), pixels, cuda_stream=stream)
        event = torch.cuda.Event()
        event.record(stream)
        self._local.copied = event
        return pixels
