"""Pictures for the demo's ``vlm.image`` samples: what each simulated vector stands for.

The scenario's image stream is vectors only (:mod:`pipelines.scenarios.vlm`): eight kinds
of picture users send, a ninth kind that FM-6 brings, and a shift that FM-6 applies to
every image (a new camera). An annotator of the image queue needs to see them, so the demo
draws a small schematic picture of each sample it queued, with a caption that says what it
shows: the kind sets the scene, the shift tints it warm and dark, the sample's id moves
the details. Drawn only for queued samples (tens, not the stream's thousands), so the
demo's start-up does not pay for pictures nobody opens.
"""

from __future__ import annotations

import hashlib
import io
import itertools
from collections.abc import Callable

from PIL import Image, ImageDraw

W, H = 320, 240
Draw = ImageDraw.ImageDraw
Scene = Callable[[Draw, Callable[[int], int]], None]

CAPTIONS = (
    "A photo of a shop receipt",
    "A bar chart from a sales report",
    "A product photo on a white background",
    "A screenshot of a mobile app's settings",
    "A handwritten shopping list on a sticky note",
    "A red stop sign at a street corner",
    "A scanned two-column document page",
    "A photo of a cat on a sofa",
    "A photo of a damaged, dented parcel",  # the kind FM-6 brings
)


def _receipt(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((110 + j(10), 20, 210 + j(10), 220), fill="white", outline="#999")
    for y in range(40, 200, 16):
        d.line((122, y, 160 + j(40), y), fill="#555", width=3)
        d.line((180, y, 198, y), fill="#555", width=3)


def _chart(d: Draw, j: Callable[[int], int]) -> None:
    d.line((40, 200, 290, 200), fill="#333", width=2)
    for i in range(5):
        top = 60 + j(120)
        d.rectangle((55 + 45 * i, top, 85 + 45 * i, 200), fill=("#3b7dd8", "#e08a2e")[i % 2])


def _product(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((0, 0, W, H), fill="#f4f4f4")
    r = 60 + j(20)
    d.ellipse((160 - r, 120 - r, 160 + r, 120 + r), fill=("#2a9d8f", "#e76f51", "#264653")[j(3)])
    d.ellipse((120, 185, 200, 200), fill="#ddd")


def _screenshot(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((100, 10, 220, 230), fill="#fff", outline="#222", width=3)
    d.rectangle((103, 13, 217, 40), fill="#4361ee")
    for i in range(5):
        y = 55 + 33 * i
        d.line((112, y + 8, 170, y + 8), fill="#444", width=3)
        on = j(2) == 1
        d.rounded_rectangle((180, y, 208, y + 16), 8, fill="#52b788" if on else "#bbb")


def _note(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((70, 30, 250, 210), fill="#ffe66d")
    for y in range(60, 200, 28):
        pts = [(90 + x, y + (4 if (x // 12) % 2 else -4) + j(3)) for x in range(0, 140 + j(20), 12)]
        d.line(pts, fill="#1d3557", width=3)


def _sign(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((0, 0, W, H), fill="#9ec1e6")
    d.rectangle((155, 120, 165, 240), fill="#666")
    c, r = (160 + j(20), 90), 55
    pts = [(c[0] + r * dx, c[1] + r * dy) for dx, dy in (
        (-0.4, -1), (0.4, -1), (1, -0.4), (1, 0.4), (0.4, 1), (-0.4, 1), (-1, 0.4), (-1, -0.4)
    )]  # fmt: skip
    d.polygon(pts, fill="#d62828", outline="white")
    d.text((c[0] - 14, c[1] - 5), "STOP", fill="white")


def _document(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((60, 10, 260, 230), fill="white", outline="#aaa")
    for col in (75, 168):
        for y in range(30, 215, 11):
            d.line((col, y, col + 70 - j(15), y), fill="#777", width=2)


def _cat(d: Draw, j: Callable[[int], int]) -> None:
    d.rectangle((0, 140, W, H), fill="#8d6e63")
    x = 110 + j(60)
    d.ellipse((x, 110, x + 120, 180), fill="#f4a261")
    d.ellipse((x + 80, 80, x + 130, 130), fill="#f4a261")
    d.polygon([(x + 84, 92), (x + 92, 66), (x + 102, 86)], fill="#f4a261")
    d.polygon([(x + 110, 86), (x + 120, 66), (x + 127, 92)], fill="#f4a261")


def _parcel(d: Draw, j: Callable[[int], int]) -> None:
    d.polygon([(80, 90), (230, 80 + j(10)), (250, 200), (70, 210)], fill="#b08968")
    d.line((150, 85, 160, 205), fill="#7f5539", width=6)
    d.line((110, 120 + j(20), 140, 160, 120, 190), fill="#3d2c1e", width=4)  # the dent


SCENES: tuple[Scene, ...] = (
    _receipt, _chart, _product, _screenshot, _note, _sign, _document, _cat, _parcel,
)  # fmt: skip


def picture(kind: int, shift: float, sample_id: str) -> bytes:
    """A PNG of one sample: its kind's scene, its details moved by its id, tinted by the
    new camera's ``shift`` (0 before FM-6; up to about 0.5)."""
    digest = hashlib.sha256(sample_id.encode()).digest()
    pos = itertools.count()  # details cycle through the digest's bytes

    def jitter(n: int) -> int:
        return digest[next(pos) % len(digest)] % max(n, 1)

    img = Image.new("RGB", (W, H), "#e9ecef")
    SCENES[kind % len(SCENES)](ImageDraw.Draw(img), jitter)
    if shift > 0:  # the new camera: darker and warmer
        tint = Image.new("RGB", (W, H), (90, 40, 0))
        img = Image.blend(img, tint, min(0.6, float(shift)))
    out = io.BytesIO()
    img.save(out, format="PNG", optimize=False)
    return out.getvalue()


def caption(kind: int) -> str:
    return CAPTIONS[kind % len(CAPTIONS)]
