"""One interface over the batched JPEG decoders that feed the model: which, and how chosen.

Every backend takes the JPEGs the probe passed for the device (baseline or progressive,
8-bit, 3 components, well-formed scan) and returns normalised ``(n, 3, S, S)`` pixels on
the device, plus the items it refused; refused items go to PIL, which either reads them or
says why not. Backends:

``dali``
    NVIDIA DALI: decode (hardware JPEG engines and CUDA, split by ``hw_decoder_load``),
    resize, crop and normalise in one pipeline on DALI's own stream and threads.
``nvimgcodec``
    nvImageCodec: batched decode of mixed sizes on the caller's stream, zero-copy into
    torch; resize and normalise as for torchvision.
``torchvision``
    ``torchvision.io.decode_jpeg`` (nvJPEG on CUDA) and a tensor resize; also runs on CPU.
``pil``
    no device decode: every item goes through PIL and open_clip's own preprocess.

``auto`` takes the first of dali, nvimgcodec, torchvision that is installed on CUDA and
PIL on CPU. DALI and nvImageCodec are optional imports: the service installs neither.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Collection, Sequence
from typing import Literal

import torch

from pipelines.embedding.device_pixels import DeviceDecoder, DevicePixels, resize_decoded
from pipelines.embedding.gpu_decode import (
    BytesLike,
    PixelSpec,
    decode_jpegs,
    normalization_constants,
)
from pipelines.embedding.image_probe import ImageProbe

DecoderName = Literal["auto", "dali", "nvimgcodec", "torchvision", "pil"]
DECODER_NAMES: tuple[str, ...] = ("auto", "dali", "nvimgcodec", "torchvision", "pil")
# Module that must import for each optional backend, and the PyPI names that provide it.
OPTIONAL_MODULES = {
    "dali": ("nvidia.dali", "nvidia-dali-cuda130 (or -cuda120)"),
    "nvimgcodec": ("nvidia.nvimgcodec", "nvidia-nvimgcodec-cu13 (or -cu12)"),
}
_AUTO_ORDER = ("dali", "nvimgcodec", "torchvision")


def module_installed(module: str) -> bool:
    """Whether ``module`` can be found, without importing it (DALI's import takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing or half-installed
        return False


def installed_backends() -> set[str]:
    """The optional backends whose module is present on this machine."""
    return {name for name, (module, _) in OPTIONAL_MODULES.items() if module_installed(module)}


def resolve_decoder(name: str, *, cuda: bool, installed: Collection[str] | None = None) -> str:
    """The concrete backend for a setting; ``ValueError`` says what is missing.

    ``installed`` defaults to what :func:`installed_backends` finds.
    """
    if name not in DECODER_NAMES:
        raise ValueError(f"image decoder must be one of {', '.join(DECODER_NAMES)}; got {name!r}")
    present = installed_backends() if installed is None else set(installed)
    if name == "auto":
        if not cuda:
            return "pil"
        return next(n for n in _AUTO_ORDER if n == "torchvision" or n in present)
    if name in OPTIONAL_MODULES:
        if not cuda:
            raise ValueError(f"image decoder {name!r} needs a CUDA device")
        if name not in present:
            package = OPTIONAL_MODULES[name][1]
            raise ValueError(f"image decoder {name!r} needs the {package} package")
    return name


class TorchvisionDecoder:
    """``torchvision.io.decode_jpeg`` on the device (nvJPEG on CUDA), then a tensor resize."""

    name = "torchvision"

    def __init__(self, device: torch.device, spec: PixelSpec) -> None:
        self.device = device
        self.spec = spec
        self._scale, self._shift = normalization_constants(spec, device)

    def decode_resize(
        self, datas: Sequence[BytesLike], probes: Sequence[ImageProbe]
    ) -> DevicePixels:
        decoded = decode_jpegs(datas, self.device)
        return resize_decoded(decoded, self.spec, self._scale, self._shift)


def build_device_decoder(
    name: str,
    device: torch.device,
    spec: PixelSpec,
    *,
    max_batch: int,
    hw_decoder_load: float,
) -> DeviceDecoder | None:
    """The backend for a resolved name; None for ``pil`` (no device decode).

    A package that is present but does not import (a CUDA mismatch, a missing library)
    raises ``ValueError`` with the import error, like a package that is absent.
    """
    factories: dict[str, Callable[[], DeviceDecoder]] = {
        "torchvision": lambda: TorchvisionDecoder(device, spec),
        "nvimgcodec": lambda: _nvimgcodec(device, spec, hw_decoder_load),
        "dali": lambda: _dali(device, spec, max_batch, hw_decoder_load),
    }
    if name == "pil":
        return None
    try:
        return factories[name]()
    except ImportError as exc:
        package = OPTIONAL_MODULES.get(name, ("", name))[1]
        raise ValueError(f"image decoder {name!r} could not load {package}: {exc}") from exc


def _nvimgcodec(device: torch.device, spec: PixelSpec, hw_decoder_load: float) -> DeviceDecoder:
    from pipelines.embedding.nvimgcodec_decode import NvImageCodecDecoder

    return NvImageCodecDecoder(device, spec, hw_decoder_load=hw_decoder_load)


def _dali(
    device: torch.device, spec: PixelSpec, max_batch: int, hw_decoder_load: float
) -> DeviceDecoder:
    from pipelines.embedding.dali_decode import DaliDecoder

    return DaliDecoder(
        device,
        spec,
        max_batch=max_batch,
        hw_decoder_load=hw_decoder_load,
        fallback=TorchvisionDecoder(device, spec),
    )
