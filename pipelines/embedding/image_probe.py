"""Check one image item before any pixel is decoded: type, format, size and decode route.

Reading the JPEG frame header or the PNG ``IHDR`` chunk costs microseconds and gives the
pixel count, so a decompression bomb is refused before a decoder allocates for it, and
every refusal names the item and the reason.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
from PIL import Image

JPEG_MAGIC = b"\xff\xd8\xff"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DEFAULT_MAX_PIXELS = 50_000_000

# SOF markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Baseline and progressive Huffman JPEGs are what nvJPEG decodes; the rest go to PIL.
_DEVICE_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2})
_OTHER_FORMATS = {
    b"GIF8": "GIF",
    b"BM": "BMP",
    b"II*\x00": "TIFF",
    b"MM\x00*": "TIFF",
}

# Bytes that may follow 0xFF after the first SOS: stuffing (00), fill (FF), RST0-7, EOI,
# and the segments allowed between scans (DHT, SOS, DQT, DNL, DRI, APPn, COM).
_FOLLOWS_FF_IN_SCAN = np.zeros(256, dtype=bool)
_FOLLOWS_FF_IN_SCAN[[0x00, 0xFF, 0xD9, 0xC4, 0xDA, 0xDB, 0xDC, 0xDD, 0xFE]] = True
_FOLLOWS_FF_IN_SCAN[0xD0:0xD8] = True
_FOLLOWS_FF_IN_SCAN[0xE0:0xF0] = True

ImageKind = Literal["jpeg", "png", "pil"]


@dataclass(frozen=True, slots=True)
class ItemError:
    """One rejected item of a batch: its position in the input and a readable reason.

    Unpacks as ``index, message``.
    """

    index: int
    message: str

    def __iter__(self) -> Iterator[int | str]:
        return iter((self.index, self.message))


class ImageItemError(ValueError):
    """An image item could not be embedded; ``index`` is its position in the input."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"image item {index}: {reason}")
        self.index = index
        self.reason = reason


class ImageRejected(ValueError):
    """Raised by :func:`probe_image` with a reason that does not yet know the item index."""


@dataclass(frozen=True, slots=True)
class ImageProbe:
    """What the header says about one item, and whether the batched device decoder may take it."""

    kind: ImageKind
    width: int
    height: int
    device_decodable: bool


def probe_image(item: object, *, max_pixels: int, for_device: bool = True) -> ImageProbe:
    """Classify ``item`` (JPEG/PNG bytes or a PIL image) and enforce ``max_pixels``.

    Raises :class:`ImageRejected` with the reason for anything that cannot be embedded.
    With ``for_device=False`` (everything goes to PIL) the scan of a JPEG is not vetted
    for the device decoder and ``device_decodable`` is False.
    """
    if isinstance(item, Image.Image):
        width, height = item.size
        _check_pixels(width, height, max_pixels)
        return ImageProbe("pil", width, height, device_decodable=False)
    if not isinstance(item, bytes | bytearray | memoryview):
        raise ImageRejected(
            f"unsupported item type {type(item).__name__}; expected JPEG or PNG bytes "
            "or a PIL.Image.Image"
        )
    data = bytes(item[:64]) if isinstance(item, memoryview) else item
    if len(item) == 0:
        raise ImageRejected("empty image data")
    if data[:3] == JPEG_MAGIC:
        probe = _probe_jpeg(item, for_device)
    elif data[:8] == PNG_MAGIC:
        probe = _probe_png(data)
    else:
        raise ImageRejected(_unsupported_format_message(bytes(data[:16])))
    _check_pixels(probe.width, probe.height, max_pixels)
    return probe


def _check_pixels(width: int, height: int, max_pixels: int) -> None:
    if width <= 0 or height <= 0:
        raise ImageRejected(f"corrupt image: header gives size {width}x{height}")
    pixels = width * height
    if pixels > max_pixels:
        raise ImageRejected(
            f"image is {width}x{height} = {pixels:,} pixels, over the limit of "
            f"{max_pixels:,} pixels (max_pixels)"
        )


def _unsupported_format_message(head: bytes) -> str:
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        name: str | None = "WebP"
    elif head[4:8] == b"ftyp":
        name = "HEIF/AVIF"
    else:
        name = next((n for magic, n in _OTHER_FORMATS.items() if head.startswith(magic)), None)
    if name is not None:
        return f"unsupported image format {name}; send JPEG or PNG"
    return f"not a JPEG or PNG image (starts with {head[:8]!r})"


def _probe_png(data: bytes | bytearray | memoryview) -> ImageProbe:
    # Signature (8) + IHDR length (4) + b"IHDR" (4) + width (4) + height (4).
    if len(data) < 24 or bytes(data[12:16]) != b"IHDR":
        raise ImageRejected("corrupt PNG: missing IHDR header")
    width, height = struct.unpack(">II", bytes(data[16:24]))
    return ImageProbe("png", width, height, device_decodable=False)


def _probe_jpeg(data: bytes | bytearray | memoryview, for_device: bool) -> ImageProbe:
    """Walk the marker segments to the frame header and on to the first scan (ITU-T T.81,
    B.1.1.3 and B.2), then check the scan's byte stuffing (see :func:`_scan_is_well_formed`).

    Anything odd after the frame header is left to PIL rather than refused here.
    """
    view = memoryview(data)
    size = len(view)
    pos = 2
    frame: tuple[int, int, int, int, int] | None = None  # marker, precision, height, width, comps
    scan_start: int | None = None
    while pos < size:
        if view[pos] != 0xFF:
            if frame is not None:
                break
            raise ImageRejected(f"corrupt JPEG: expected a marker at byte {pos}")
        while pos < size and view[pos] == 0xFF:  # fill bytes
            pos += 1
        if pos >= size:
            break
        marker = view[pos]
        pos += 1
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # standalone markers
            continue
        if marker == 0xD9 or (marker == 0xDA and frame is None):
            if frame is None:
                raise ImageRejected("corrupt JPEG: no frame header before the image data")
            break
        if pos + 2 > size:
            break
        length = (view[pos] << 8) | view[pos + 1]
        if length < 2 or pos + length > size:
            break
        if marker == 0xDA:
            scan_start = pos + length
            break
        if marker in _SOF_MARKERS and frame is None:
            if length < 8:
                raise ImageRejected("corrupt JPEG: frame header too short")
            precision, height, width, components = struct.unpack(
                ">BHHB", bytes(view[pos + 2 : pos + 8])
            )
            frame = (marker, precision, height, width, components)
        pos += length
    if frame is None:
        raise ImageRejected("corrupt JPEG: truncated before the frame header")
    marker, precision, height, width, components = frame
    # A JPEG cut short has no end-of-image marker; PIL then reports the truncation,
    # whereas a hardware decoder may return a partly grey image without complaint.
    complete = bytes(view[size - 2 :]) == b"\xff\xd9"
    decodable = (
        for_device
        and marker in _DEVICE_SOF_MARKERS
        and precision == 8
        and components == 3
        and height > 0
        and complete
        and scan_start is not None
        and _scan_is_well_formed(view, scan_start)
    )
    # Height 0 means a DNL segment defines it later; let PIL decide.
    return ImageProbe("jpeg", width, max(height, 1), device_decodable=decodable)


def _scan_is_well_formed(view: memoryview, start: int) -> bool:
    """Every 0xFF in the entropy-coded data is stuffed (FF 00), fill, a restart or a marker
    that may follow a scan.

    nvJPEG's hardware decoder turns a scrambled scan into a plausible picture without an
    error, where libjpeg stops at the first bad marker. A bad FF pair is how most damage to
    a scan shows; such files go to PIL, which decides (a false alarm only costs CPU time).
    """
    scan = np.frombuffer(view, dtype=np.uint8)[start:]
    follows = scan[np.flatnonzero(scan[:-1] == 0xFF) + 1]
    return bool(_FOLLOWS_FF_IN_SCAN[follows].all())
