"""Layout once, style many times: word positions are fixed per sample, only fill colors change.

Each sample's words are laid out a single time (line breaks, x/y positions); every visual condition
then draws the same words at the same places, so two conditions of one sample can differ only inside
the boxes of the words whose color changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 800, 600
MARGIN = 40
BACKGROUND = (255, 255, 255)
BREAK = "\n"  # a word whose text is BREAK ends the line and leaves one blank line


@dataclass(frozen=True)
class Placed:
    """A word at its drawing origin, with its ink box (x0, y0, x1, y1) on the canvas and its role."""

    text: str
    role: str
    x: int
    y: int
    box: tuple[int, int, int, int]


def layout(words: list[tuple[str, str]], font: ImageFont.FreeTypeFont) -> list[Placed]:
    """Greedy line filling inside the margins; raises when the text does not fit the canvas."""
    space = font.getlength(" ")
    ascent, descent = font.getmetrics()
    line_height = int((ascent + descent) * 1.35)
    x, y = float(MARGIN), float(MARGIN)
    placed: list[Placed] = []
    for text, role in words:
        if text == BREAK:
            x, y = MARGIN, y + 2 * line_height
            continue
        width = font.getlength(text)
        if x > MARGIN and x + width > WIDTH - MARGIN:
            x, y = MARGIN, y + line_height
        x0, y0, x1, y1 = (int(v) for v in font.getbbox(text))  # whole pixels: the text has no stroke
        ix, iy = round(x), round(y)
        placed.append(Placed(text, role, ix, iy, (ix + x0 - 1, iy + y0 - 1, ix + x1 + 1, iy + y1 + 1)))
        x += width + space
    if placed and max(p.box[3] for p in placed) > HEIGHT - MARGIN // 2:
        raise ValueError(f"text does not fit a {WIDTH}x{HEIGHT} canvas at font size {font.size}")
    return placed


class Canvas:
    """One sample's words, rasterised once as coverage masks, composited in any colors.

    Each word's anti-aliased glyph coverage is drawn a single time; a condition then blends its fill
    color through that mask onto white (``Image.paste(color, box, mask)``), so fully covered pixels
    carry exactly the fill color and a word's pixels never depend on another word's color.
    """

    def __init__(self, placed: list[Placed], font: ImageFont.FreeTypeFont) -> None:
        self.placed = placed
        self.masks = []
        for word in placed:
            x0, y0, x1, y1 = word.box
            mask = Image.new("L", (x1 - x0, y1 - y0), 0)
            ImageDraw.Draw(mask).text((word.x - x0, word.y - y0), word.text, fill=255, font=font)
            self.masks.append(mask)
        self._cache: dict[tuple[tuple[int, int, int], ...], Image.Image] = {}

    def draw(self, colors: list[tuple[int, int, int]]) -> Image.Image:
        """The canvas with word k in ``colors[k]``; starts from the most similar image drawn so far."""
        colors = [(r, g, b) for r, g, b in colors]  # hashable, for the cache keys
        base_key = self._base_key(colors)
        if base_key in self._cache:
            image = self._cache[base_key].copy()
            todo: Sequence[int] = [k for k, (c, b) in enumerate(zip(colors, base_key, strict=True)) if c != b]
        else:
            image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
            todo = range(len(colors))
        for k in todo:
            box = self.placed[k].box
            if base_key in self._cache:
                image.paste(BACKGROUND, box)  # erase the base color inside this word's box first
            image.paste(colors[k], box[:2], self.masks[k])
        if base_key not in self._cache:
            self._cache[base_key] = image.copy()
        return image

    @staticmethod
    def _base_key(colors: list[tuple[int, int, int]]) -> tuple[tuple[int, int, int], ...]:
        """The uniform coloring most of the words share (the condition's 'rest of the text')."""
        from collections import Counter

        common = Counter(colors).most_common(1)[0][0]
        return tuple(common for _ in colors)


def draw(placed: list[Placed], colors: list[tuple[int, int, int]], font: ImageFont.FreeTypeFont) -> Image.Image:
    """Render every word in its own fill color with PIL's text drawing (the reference renderer)."""
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    pen = ImageDraw.Draw(image)
    for word, color in zip(placed, colors, strict=True):
        pen.text((word.x, word.y), word.text, fill=color, font=font)
    return image


def png_bytes(image: Image.Image, gray: bool = False) -> bytes:
    """Lossless PNG, encoded for speed (zlib level 1, no row filter: mostly-white text pages compress
    as well as with adaptive filtering, about 3x faster). Pixels are exact, which the dataset's pixel
    checks rely on. ``gray`` stores an image whose pixels all have R = G = B as 8-bit grayscale (same
    pixels, a third of the bytes); it loads back as mode L."""
    import imagecodecs
    import numpy as np

    pixels = np.asarray(image.convert("L") if gray else image)
    return bytes(imagecodecs.png_encode(pixels, level=1, filter=8))


def measured_color(image: Image.Image, boxes: list[tuple[int, int, int, int]]) -> tuple[int, int, int] | None:
    """The ink color of some words as rendered: inside their boxes, the pixel farthest from the
    background (a fully covered glyph pixel carries the exact fill color)."""
    import numpy as np

    best, best_dist = None, 0
    for box in boxes:
        patch = np.asarray(image.crop(box), dtype=np.int32).reshape(-1, 3)
        if patch.size == 0:
            continue
        dist = np.abs(patch - np.array(BACKGROUND)).sum(axis=1)
        k = int(dist.argmax())
        if dist[k] > best_dist:
            r, g, b = (int(v) for v in patch[k])
            best, best_dist = (r, g, b), int(dist[k])
    return best


def delta_e_2000(color: tuple[int, int, int], background: tuple[int, int, int] = BACKGROUND) -> float:
    """CIEDE2000 between two sRGB colors (scikit-image's implementation)."""
    import numpy as np
    from skimage.color import deltaE_ciede2000, rgb2lab

    lab = rgb2lab(np.array([[color, background]], dtype=np.float64) / 255.0)
    return float(deltaE_ciede2000(lab[0, 0], lab[0, 1]))  # type: ignore[no-untyped-call]  # unannotated upstream
