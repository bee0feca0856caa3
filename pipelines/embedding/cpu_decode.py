"""CPU decode with PIL, then the model's own open_clip preprocess.

This is the reference path: any JPEG or PNG PIL reads, PIL images passed in directly, and
every item the batched device decoder refused. PIL releases the GIL while it decodes and
resizes, so a thread pool scales over cores.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future

import torch
from PIL import Image

from pipelines.embedding.image_probe import ImageProbe, ImageRejected

Preprocess = Callable[[Image.Image], torch.Tensor]

_KIND_NAMES = {"jpeg": "JPEG", "png": "PNG", "pil": "image"}


def decode_with_pil(item: object, probe: ImageProbe, preprocess: Preprocess) -> torch.Tensor:
    """Return the normalised ``(3, S, S)`` float32 tensor for one item.

    Raises :class:`ImageRejected` when PIL cannot read the pixels.
    """
    kind = _KIND_NAMES[probe.kind]
    try:
        if isinstance(item, Image.Image):
            image = item
        else:
            assert isinstance(item, bytes | bytearray | memoryview)
            image = Image.open(io.BytesIO(item), formats=[kind])
        image.load()  # decode now, so truncation surfaces here and not inside preprocess
        # Convert before resizing: open_clip resizes first, which resamples palette images
        # with nearest neighbour and RGBA ones premultiplied; RGB first matches the GPU path.
        rgb = image.convert("RGB")
    except Image.DecompressionBombError as exc:
        raise ImageRejected(f"image is too large to decode safely: {exc}") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageRejected(f"corrupt {kind}: {exc}") from exc
    return preprocess(rgb)


def submit_pil_decodes(
    pool: Executor,
    items: Sequence[object],
    probes: Sequence[ImageProbe],
    preprocess: Preprocess,
) -> list[Future[torch.Tensor]]:
    """Start decoding ``items`` in ``pool``; pass the result to :func:`collect_decodes`."""
    return [
        pool.submit(decode_with_pil, item, probe, preprocess)
        for item, probe in zip(items, probes, strict=True)
    ]


def collect_decodes(futures: Sequence[Future[torch.Tensor]]) -> list[torch.Tensor | str]:
    """Wait for decodes; each entry is the pixel tensor or the rejection reason."""
    results: list[torch.Tensor | str] = []
    for future in futures:
        try:
            results.append(future.result())
        except ImageRejected as exc:
            results.append(str(exc))
    return results
