"""The testset's hues and its OCR words, as the paper defines them: the builder draws its images with them
and the CLIP probe renders the same colors and words."""

from __future__ import annotations

# Active RGB channels per hue; intensity is the magnitude on those channels (34 subtle, 85 mild, 136 strong).
HUES = {
    "red": (1, 0, 0),
    "green": (0, 1, 0),
    "blue": (0, 0, 1),
    "yellow": (1, 1, 0),
    "cyan": (0, 1, 1),
    "magenta": (1, 0, 1),
}

OCR_WORDS = (
    "apple river candle garden window silver planet rocket violin forest "
    "bottle mirror pencil ladder orange marble castle anchor basket feather"
).split()
