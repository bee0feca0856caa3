"""nvImageCodec backend: batched JPEG decode on the caller's CUDA stream, zero-copy to torch.

Unlike torchvision's nvJPEG path (one process-wide lock, its own pool stream), each
prepare thread gets its own ``nvimgcodec.Decoder`` and decodes on that thread's side
stream, so decode and the model's kernels can overlap. The hardware JPEG engines take
``hw_decoder_load`` of each batch and the CUDA decoder the rest; what neither decodes comes
back as None and goes to PIL.

Settings chosen to match PIL, the reference path: no EXIF rotation (PIL's ``Image.open``
does not rotate), sRGB output, and fancy (smooth) chroma upsampling as libjpeg does;
nvImageCodec's own default turns it off.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from pipelines.embedding.device_pixels import DevicePixels, resize_decoded
from pipelines.embedding.gpu_decode import BytesLike, PixelSpec, normalization_constants
from pipelines.embedding.image_probe import ImageProbe

DECODER_OPTIONS = ":fancy_upsampling=1"


class NvImageCodecDecoder:
    """Decode with nvImageCodec, then the shared tensor resize, crop and normalise.

    ``module`` is ``nvidia.nvimgcodec`` unless given (tests pass a stand-in).
    """

    name = "nvimgcodec"

    def __init__(
        self,
        device: torch.device,
        spec: PixelSpec,
        *,
        hw_decoder_load: float = 0.75,
        module: Any | None = None,
    ) -> None:
        if not 0.0 <= hw_decoder_load <= 1.0:
            raise ValueError(f"hw_decoder_load must be in [0, 1], got {hw_decoder_load}")
        if module is None:
            from nvidia import nvimgcodec

            module = nvimgcodec
        codec: Any = module
        self._codec = codec
        self.device = device
        self.spec = spec
        self._scale, self._shift = normalization_constants(spec, device)
        color = getattr(codec.ColorSpec, "SRGB", None) or codec.ColorSpec.RGB  # RGB before 0.7
        self._params = codec.DecodeParams(
            apply_exif_orientation=False, color_spec=color, allow_any_depth=False
        )
        kind = codec.BackendKind
        # Hardware engines first (their share), CUDA for the rest, hybrid for what CUDA
        # cannot do; no CPU-only backend: its images live in host memory.
        self._backends = [
            codec.Backend(kind.HW_GPU_ONLY, load_hint=hw_decoder_load),
            codec.Backend(kind.GPU_ONLY, load_hint=1.0),
            codec.Backend(kind.HYBRID_CPU_GPU, load_hint=1.0),
        ]
        self._local = threading.local()

    def _decoder(self) -> Any:
        decoder = getattr(self._local, "decoder", None)
        if decoder is None:
            index = self.device.index
            if index is None:
                index = torch.cuda.current_device() if self.device.type == "cuda" else 0
            decoder = self._local.decoder = self._codec.Decoder(
                device_id=index, backends=self._backends, options=DECODER_OPTIONS
            )
        return decoder

    def decode_resize(
        self, datas: Sequence[BytesLike], probes: Sequence[ImageProbe]
    ) -> DevicePixels:
        if not datas:
            return DevicePixels(None, [])
        streams = [d if isinstance(d, bytes) else np.frombuffer(d, dtype=np.uint8) for d in datas]
        cuda_stream = (
            torch.cuda.current_stream(self.device).cuda_stream if self.device.type == "cuda" else 0
        )
        try:
            images = self._decoder().decode(streams, params=self._params, cuda_stream=cuda_stream)
        except Exception as exc:  # the whole call failed: PIL reads each item or says why not
            reason = f"nvImageCodec refused the batch: {exc}"
            return DevicePixels(None, [], dict.fromkeys(range(len(datas)), reason))
        decoded: list[torch.Tensor | str | None] = []
        for image in images:
            if image is None:
                decoded.append(None)
                continue
            # Zero-copy through __cuda_array_interface__; the tensor keeps the image alive.
            hwc = torch.as_tensor(image, device=self.device)
            if hwc.ndim != 3 or hwc.shape[2] != 3 or hwc.dtype != torch.uint8:
                decoded.append(f"nvImageCodec returned {tuple(hwc.shape)} {hwc.dtype}")
                continue
            decoded.append(hwc.permute(2, 0, 1))
        return resize_decoded(decoded, self.spec, self._scale, self._shift)
