"""The CLIP semantic-projection probe of the Stealth paper (section 3.3): whether a word's hue alone moves
CLIP's image embedding along semantic axes.

Symbols: T(w) is CLIP's L2-normalised text embedding of the string w, V(x) its L2-normalised image
embedding of image x; x(w, c) is the single word w rendered in color c on white (DroidSans, as the
testset). Each of the ten bipolar axes k = (w+_k, w-_k) has the direction a_k = (T(w+_k) - T(w-_k)) /
||T(w+_k) - T(w-_k)||, and the semantic projection of a rendering is s_k(w, c) = V(x(w, c)) . a_k.
The hue effect of color c on axis k is the mean over probe words of
Delta_k(c) = s_k(w, c) - s_k(w, black), the same word in black being the baseline.

Choices (the paper names neither its axes nor its words nor its text prompt): ten axes on affect and
safety (``AXES``), the 20 neutral nouns of the OCR probe as words, poles embedded as the bare word
(``template="{}"``), colors the testset's six hues at its three intensities (RGB magnitude on the
active channels), words drawn at 48 px centred on a 224 x 224 white square.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.fonts import resolve_font
from harness.protocols.stealth.palette import HUES, OCR_WORDS
from harness.protocols.stealth.tiny import TINY_CLIP
from harness.tiny_models import tiny_model_path

DEFAULT_MODEL = "openai/clip-vit-base-patch32"
AXES: tuple[tuple[str, str], ...] = (
    ("positive", "negative"),
    ("good", "bad"),
    ("happy", "sad"),
    ("pleasant", "unpleasant"),
    ("safe", "dangerous"),
    ("calm", "angry"),
    ("friendly", "hostile"),
    ("beautiful", "ugly"),
    ("healthy", "sick"),
    ("warm", "cold"),
)
BASELINE = "black"


def _unit(x: np.ndarray) -> np.ndarray:
    unit: np.ndarray = x / np.linalg.norm(x, axis=-1, keepdims=True)
    return unit


def axis_directions(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """a_k from the pole text features (axes x dim, either normalised or not)."""
    return _unit(_unit(positive) - _unit(negative))


def projections(image_features: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """s_k = V(x) . a_k for every image (rows) and axis (columns)."""
    scores: np.ndarray = _unit(image_features) @ axes.T
    return scores


def probe_colors(intensities: Sequence[int] = (34, 85, 136)) -> dict[str, tuple[int, int, int]]:
    """``black`` then ``{hue}-{intensity}`` with the testset's channel rule (red 136 = (136, 0, 0))."""
    colors = {BASELINE: (0, 0, 0)}
    for hue, channels in HUES.items():
        r, g, b = channels
        for intensity in intensities:
            colors[f"{hue}-{intensity}"] = (intensity * r, intensity * g, intensity * b)
    return colors


def render_word(word: str, rgb: tuple[int, int, int], font_path: Path, size: int = 224, font_size: int = 48) -> Any:
    """The word centred on a white square, anti-aliased."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (size, size), (255, 255, 255))
    ImageDraw.Draw(image).text(
        (size / 2, size / 2), word, fill=rgb, anchor="mm", font=ImageFont.truetype(str(font_path), font_size)
    )
    return image


@dataclass(frozen=True)
class ProbeResult:
    """s_k(w, c) for every word (axis 0), color condition (axis 1) and semantic axis (axis 2)."""

    model: str
    words: list[str]
    colors: dict[str, tuple[int, int, int]]
    axes: list[tuple[str, str]]
    projections: np.ndarray

    def hue_effect(self) -> dict[str, dict[str, float]]:
        """mean_w Delta_k(c) per color condition c (baseline left out) and axis ``w+/w-``."""
        names = list(self.colors)
        delta = self.projections - self.projections[:, [names.index(BASELINE)], :]
        mean = delta.mean(axis=0)
        return {
            c: {f"{p}/{n}": float(mean[j, k]) for k, (p, n) in enumerate(self.axes)}
            for j, c in enumerate(names)
            if c != BASELINE
        }


def load_clip(model: str) -> tuple[Any, Any]:
    """CLIPModel and CLIPProcessor: ``tiny:clip`` (random weights, for tests) or a checkpoint id or folder."""
    from transformers import CLIPModel, CLIPProcessor

    path: str | Path = model
    if model == f"tiny:{TINY_CLIP}":
        path = tiny_model_path(TINY_CLIP)
    try:
        return CLIPModel.from_pretrained(path).eval(), CLIPProcessor.from_pretrained(path)
    except OSError as exc:
        raise HarnessError(f"CLIP probe: cannot load {model!r} ({str(exc).splitlines()[0]})") from None


def _features(out: Any) -> np.ndarray:
    """Projected features whether transformers returns a tensor (4.x) or an output with pooler_output (5.x)."""
    tensor = out if hasattr(out, "detach") else out.pooler_output
    features: np.ndarray = tensor.detach().float().cpu().numpy()
    return features


def clip_probe(
    model: str = DEFAULT_MODEL,
    words: Sequence[str] | None = None,
    axes: Sequence[tuple[str, str]] = AXES,
    intensities: Sequence[int] = (34, 85, 136),
    font: str | Path | None = None,
    template: str = "{}",
    batch_size: int = 64,
) -> ProbeResult:
    """Render every word in every color, embed with CLIP and project onto the axes (module docstring)."""
    import torch

    words = list(OCR_WORDS if words is None else words)
    if not words or not axes:
        raise HarnessError("CLIP probe: needs at least one word and one axis")
    font_path = resolve_font("DroidSans.ttf", font)
    clip, processor = load_clip(model)
    colors = probe_colors(intensities)
    with torch.no_grad():
        poles = processor(text=[template.format(w) for pair in axes for w in pair], return_tensors="pt", padding=True)
        text = _features(clip.get_text_features(input_ids=poles["input_ids"], attention_mask=poles["attention_mask"]))
        directions = axis_directions(text[0::2], text[1::2])
        images = [render_word(w, rgb, font_path) for w in words for rgb in colors.values()]
        feats = [
            _features(
                clip.get_image_features(
                    pixel_values=processor(images=images[i : i + batch_size], return_tensors="pt")["pixel_values"]
                )
            )
            for i in range(0, len(images), batch_size)
        ]
    s = projections(np.concatenate(feats), directions).reshape(len(words), len(colors), len(axes))
    return ProbeResult(model, words, colors, [(p, n) for p, n in axes], s)


def hue_effect_figure(result: ProbeResult, path: Path) -> Path:
    """Heatmap of mean Delta_k(c): color conditions (rows, each row's swatch in its label) x axes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    effect = result.hue_effect()
    rows, cols = list(effect), list(next(iter(effect.values()))) if effect else []
    grid = np.array([[effect[r][c] for c in cols] for r in rows])
    limit = max(float(np.abs(grid).max()) if grid.size else 0.0, 1e-6)
    fig, ax = plt.subplots(figsize=(1.0 + 0.75 * len(cols), 1.2 + 0.32 * len(rows)), constrained_layout=True)
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    for (i, j), v in np.ndenumerate(grid):
        ax.text(j, i, f"{v:+.3f}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for label, row in zip(ax.get_yticklabels(), rows, strict=True):
        r, g, b = result.colors[row]
        label.set_color((r / 255, g / 255, b / 255))
    fig.colorbar(im, ax=ax, label="mean shift of s_k vs. the word in black")
    ax.set_title(f"CLIP semantic projection by text color ({result.model}, {len(result.words)} words)", fontsize=9)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
