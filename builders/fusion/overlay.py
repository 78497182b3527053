"""Typo-Evid: the wrong answer typed onto the image in a fixed region with a fixed style.

The region is the bottom-left corner: a white box with a one-pixel black border holding the text in
black, Pillow's bundled Aileron Regular at ``max(10, round(0.07 * min(width, height)))`` pixels (shrunk
until the box fits inside the image width), with a margin of 2% of the shorter side. The box in image
coordinates and the style are stored with every item, so attention to the region (OAR) can be read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

FONT_NAME = "Pillow bundled Aileron Regular (ImageFont.load_default)"


@dataclass(frozen=True)
class OverlayStyle:
    font: str
    size: int
    fill: str = "#000000"
    background: str = "#ffffff"
    border: str = "#000000"
    anchor: str = "bottom-left"
    margin: int = 0
    padding: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def typo_overlay(image: Any, text: str) -> tuple[Any, list[int], OverlayStyle]:
    """The image with ``text`` overlaid, the region ``[x0, y0, x1, y1]`` (exclusive ends) and the style."""
    from PIL import ImageDraw, ImageFont

    out = image.convert("RGB").copy()
    width, height = out.size
    short = min(width, height)
    margin = max(1, round(0.02 * short))
    size = max(10, round(0.07 * short))
    while True:
        font = ImageFont.load_default(size=size)
        left, top, right, bottom = font.getbbox(text)
        padding = max(2, size // 4)
        box_w, box_h = right - left + 2 * padding, bottom - top + 2 * padding
        if box_w <= width - 2 * margin or size <= 6:
            break
        size -= 1
    x0, y1 = margin, height - margin
    x1, y0 = min(width, x0 + box_w), max(0, y1 - box_h)
    draw = ImageDraw.Draw(out)
    draw.rectangle([x0, y0, x1 - 1, y1 - 1], fill="#ffffff", outline="#000000")
    draw.text((x0 + padding - left, y0 + padding - top), text, fill="#000000", font=font)
    style = OverlayStyle(font=FONT_NAME, size=size, margin=margin, padding=padding)
    return out, [x0, y0, x1, y1], style
