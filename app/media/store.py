"""Uploaded images on disk: checked from the header, saved under generated names, deleted.

A client never names a file: each image is saved as ``<32 hex>.<ext>`` under
``settings.media_dir``, and a path is only ever built from such a name and checked to lie
inside that directory, so no id or sample name can reach another file.
"""

from __future__ import annotations

import io
import logging
import os
import re
import secrets
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from app.private_files import create_file, make_folder

log = logging.getLogger("telltale.media")

# Decided by magic bytes, never by the client's Content-Type.
_FORMATS = {
    "JPEG": ("image/jpeg", ".jpg"),
    "PNG": ("image/png", ".png"),
    "WEBP": ("image/webp", ".webp"),
}
CONTENT_TYPES = {ext: ctype for ctype, ext in _FORMATS.values()}
_FILE_NAME = re.compile(r"^[0-9a-f]{32}\.(jpg|png|webp)$")


class MediaRejected(ValueError):
    """An upload that is refused; ``status`` is the HTTP answer (413, 415 or 422)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ImageInfo:
    content_type: str
    ext: str
    width: int
    height: int


def sniff_format(data: bytes) -> str | None:
    if data[:3] == b"\xff\xd8\xff":
        return "JPEG"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def check_image(data: bytes, *, max_bytes: int, max_pixels: int, field: str) -> ImageInfo:
    """Type from magic bytes, size limits, and a header that PIL can read (no full decode)."""
    if len(data) > max_bytes:
        raise MediaRejected(413, f"{field}: image of {len(data)} bytes exceeds {max_bytes} bytes")
    if not data:
        raise MediaRejected(422, f"{field}: empty file")
    fmt = sniff_format(data)
    if fmt is None:
        raise MediaRejected(
            415,
            f"{field}: unsupported image type (starts with {data[:8]!r}); send JPEG, PNG or WebP",
        )
    try:
        with warnings.catch_warnings():
            # The pixel limit is ours (below); PIL's bomb warning would only repeat it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=[fmt]) as image:
                width, height = image.size
    except Image.DecompressionBombError:
        raise MediaRejected(413, f"{field}: image has too many pixels to decode safely") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise MediaRejected(422, f"{field}: corrupt {fmt} image header: {exc}") from None
    if width <= 0 or height <= 0:
        raise MediaRejected(422, f"{field}: corrupt {fmt} image header: size {width}x{height}")
    if width * height > max_pixels:
        raise MediaRejected(
            413,
            f"{field}: image is {width}x{height} = {width * height} pixels, "
            f"over the limit of {max_pixels}",
        )
    content_type, ext = _FORMATS[fmt]
    return ImageInfo(content_type, ext, width, height)


def is_stored_name(name: str) -> bool:
    """Whether ``name`` is one :func:`save_image` generates (``<32 hex>.<ext>``)."""
    return _FILE_NAME.match(name) is not None


def image_path(media_dir: str | Path, file_name: str) -> Path:
    """The stored file for a generated name; anything else is refused."""
    if not is_stored_name(file_name):
        raise ValueError(f"not a stored media file name: {file_name!r}")
    root = Path(media_dir).resolve()
    path = (root / file_name).resolve()
    if not path.is_relative_to(root):  # belt and braces: the pattern already forbids it
        raise ValueError(f"media path escapes the media directory: {file_name!r}")
    return path


def save_image(media_dir: str | Path, data: bytes, *, ext: str) -> str:
    """Write ``data`` under a new random name (atomically: temp file, then rename), readable
    by the owner alone (:mod:`app.private_files`)."""
    root = make_folder(media_dir)
    name = secrets.token_hex(16) + ext
    path = image_path(root, name)
    tmp = path.with_name(f".{name}.tmp")
    with create_file(tmp) as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return name


def delete_image(media_dir: str | Path, file_name: str | None) -> None:
    if not file_name:
        return
    try:
        image_path(media_dir, file_name).unlink(missing_ok=True)
    except (OSError, ValueError) as exc:
        log.warning("could not delete media file %s: %s", file_name, exc)
