"""Typo-Evid: the wrong answer typed onto the image in a fixed region with a fixed style.

The region is the bottom centre of the image's central square (the part that every center-cropping
processor, e.g. LLaVA's CLIP, still shows; for a landscape image that is the bottom centre of the
image): a white box with a one-pixel black border holding the text in black, Pillow's bundled Aileron
Regular at ``max(10, round(0.07 * min(width, height)))`` pixels (shrunk until the box fits the square's
width), with a margin of 2% of the shorter side. The box in image coordinates and the style are stored
with every item, so attention to the region (OAR) can be read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

FONT_NAME = "Pillow bundled Aileron Regular (ImageFont.load_default)"


@dataclass(frozen=True)
class OverlayStyle:
    """How a typographic overlay was drawn (font, size, colours, placement), recorded with each sample."""

    font: str
    size: int
    fill: str = "#000000"
    background: str = "#ffffff"
    border: str = "#000000"
    anchor: str = "bottom-center of the central square"
    margin: int = 0
    padding: int = 0

    def to_json(self) -> str:
        """The style as canonical JSON, stored with each sample."""
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
        if box_w <= short - 2 * margin or size <= 6:
            break
        size -= 1
    left_sq, top_sq = (width - short) // 2, (height - short) // 2
    x0 = max(left_sq, left_sq + (short - box_w) // 2)
    y1 = top_sq + short - margin
    x1, y0 = min(left_sq + short, x0 + box_w), max(top_sq, y1 - box_h)
    draw = ImageDraw.Draw(out)
    draw.rectangle([x0, y0, x1 - 1, y1 - 1], fill="#ffffff", outline="#000000")
    draw.text((x0 + padding - left, y0 + padding - top), text, fill="#000000", font=font)
    style = OverlayStyle(font=FONT_NAME, size=size, margin=margin, padding=padding)
    return out, [x0, y0, x1, y1], style
