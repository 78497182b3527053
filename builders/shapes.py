"""``shapes``: a small synthetic VQA set (colored shapes) for offline demos and engine tests.

Every image is drawn here from a seed, so the set builds anywhere without downloads. Two questions per
image (its color, its shape) feed the tasks ``shapes_color`` and ``shapes_kind``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builders.options import option
from builders.publish import write_hub_folder

REPO_ID = "vlm-audit/shapes"
COLORS = {"red": (220, 30, 30), "green": (30, 170, 60), "blue": (40, 70, 220), "yellow": (235, 210, 40)}
KINDS = ("circle", "square", "triangle")
SIZE = 56  # a multiple of 28, so Qwen2-VL style processors keep the image as drawn


def draw(kind: str, color: tuple[int, int, int], rng: random.Random) -> object:
    """A white square image with one filled ``kind`` (circle, square or triangle) of ``color``, placed
    at random."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (SIZE, SIZE), (255, 255, 255))
    pen = ImageDraw.Draw(image)
    r = rng.randint(14, 22)
    cx, cy = rng.randint(r + 2, SIZE - r - 2), rng.randint(r + 2, SIZE - r - 2)
    if kind == "circle":
        pen.ellipse((cx - r, cy - r, cx + r, cy + r), fill=color)
    elif kind == "square":
        pen.rectangle((cx - r, cy - r, cx + r, cy + r), fill=color)
    else:
        pen.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=color)
    return image


@dataclass(frozen=True)
class Options:
    """What ``harness build shapes`` takes."""

    seed: int = option("position seed", 0)
    n: int = option("number of images", 96)


def build(out: Path, options: Options) -> Path:
    """Draw ``n`` shapes (all color x kind combinations, cycled) with positions from ``seed``."""
    from datasets import Dataset, DatasetDict, Features, Image, Value

    n, seed = options.n, options.seed
    rng = random.Random(seed)
    rows: dict[str, list[Any]] = {"id": [], "image": [], "color": [], "kind": []}
    combos = [(c, k) for c in COLORS for k in KINDS]
    for i in range(n):
        color, kind = combos[i % len(combos)]
        rows["id"].append(f"shape-{i:04d}")
        rows["image"].append(draw(kind, COLORS[color], rng))
        rows["color"].append(color)
        rows["kind"].append(kind)
    features = Features({"id": Value("string"), "image": Image(), "color": Value("string"), "kind": Value("string")})
    dataset = DatasetDict({"test": Dataset.from_dict(rows, features=features)})
    return write_hub_folder(dataset, out, "shapes", {"num_rows": n, "seed": seed})
