"""The visual conditions of each subset, as the paper defines them."""

from __future__ import annotations

from typing import Any

from harness.protocols.stealth.palette import HUES

INTENSITIES = {34: "subtle", 85: "mild", 136: "strong"}
GRAY_LEVELS = (1, 16, 64, 128, 192, 240)
OCR_FONT_SIZES = (16, 32, 64)
BLACK = (0, 0, 0)


def _condition(name: str, **fields: Any) -> dict[str, Any]:
    base = {
        "condition": name,
        "colored_polarity": None,
        "hue": None,
        "intensity": None,
        "rgb": list(BLACK),
        "gray_level": None,
        "salient": None,
    }
    return {**base, **fields}


def sentiment_conditions() -> list[dict[str, Any]]:
    """37: the all-black baseline, then {positive, negative} words colored x 6 hues x 3 intensities."""
    out = [_condition("baseline")]
    for polarity in ("positive", "negative"):
        for hue, channels in HUES.items():
            for intensity in INTENSITIES:
                rgb = [intensity * c for c in channels]
                out.append(
                    _condition(
                        f"{polarity}-{hue}-{intensity}",
                        colored_polarity=polarity,
                        hue=hue,
                        intensity=intensity,
                        rgb=rgb,
                    )
                )
    return out


def vqa_conditions() -> list[dict[str, Any]]:
    """18: Global Contrast (all text at gray g) and Saliency Competition (answer or decoy black, rest g)."""
    out = [_condition(f"global-{g}", gray_level=g, rgb=[g, g, g]) for g in GRAY_LEVELS]
    for salient in ("answer", "decoy"):
        out += [_condition(f"{salient}-{g}", gray_level=g, rgb=[g, g, g], salient=salient) for g in GRAY_LEVELS]
    return out


def ocr_conditions() -> list[dict[str, Any]]:
    """Single words at each gray level and font size (the OCR proxy probe)."""
    return [
        _condition(f"gray-{g}-size-{s}", gray_level=g, rgb=[g, g, g], font_size=s)
        for s in OCR_FONT_SIZES
        for g in GRAY_LEVELS
    ]


def word_colors(roles: list[str], condition: dict[str, Any]) -> list[tuple[int, int, int]]:
    """Each word's fill color under a condition; roles name what a condition restyles."""
    rgb = tuple(condition["rgb"])
    if condition["colored_polarity"] is not None:
        return [rgb if role == condition["colored_polarity"] else BLACK for role in roles]
    if condition["gray_level"] is not None:
        salient = condition["salient"]
        return [BLACK if salient is not None and role == salient else rgb for role in roles]
    return [BLACK] * len(roles)
