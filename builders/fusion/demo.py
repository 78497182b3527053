"""The FusionAudit demo source (``harness build fusion --demo``): small ChartQA, DocVQA and MME
sources in their published formats, rendered with PIL so every answer is true of its image: bar charts
with value labels, one-page forms, and shape scenes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from PIL import Image, ImageDraw, ImageFont


class DemoSources(TypedDict):
    """Where the demo wrote each source: the ``Options`` fields a build reads them from."""

    chartqa: str
    docvqa: str
    mme: str


COLORS = {"red": (220, 40, 40), "blue": (40, 80, 220), "green": (40, 160, 60)}


def _chart(values: dict[str, int]) -> Image.Image:
    image = Image.new("RGB", (160, 112), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=10)
    for k, (name, value) in enumerate(values.items()):
        x0 = 12 + 48 * k
        draw.rectangle([x0, 92 - value, x0 + 30, 92], fill=COLORS[name])
        draw.text((x0 + 4, 80 - value), str(value), fill="black", font=font)
        draw.text((x0, 96), name, fill="black", font=font)
    return image


def write_chartqa(root: Path, n: int = 4) -> Path:
    """The GitHub release layout: ``test_human.json`` beside ``png/``."""
    (root / "png").mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n):
        values = {"red": 20 + 7 * k, "blue": 45 - 5 * k, "green": 30 + 3 * k}
        _chart(values).save(root / "png" / f"chart{k}.png")
        rows.append(
            {"imgname": f"chart{k}.png", "query": "What is the value of the blue bar?", "label": str(values["blue"])}
        )
        top = max(values, key=values.__getitem__)
        rows.append(
            {
                "imgname": f"chart{k}.png",
                "query": "Which bar is taller, red or blue?",
                "label": "red" if values["red"] > values["blue"] else "blue",
            }
        )
        rows.append({"imgname": f"chart{k}.png", "query": "Which color has the highest value?", "label": top})
    path = root / "test_human.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def write_docvqa(root: Path, n: int = 4) -> Path:
    """The official layout: ``{"data": [...]}`` with image paths relative to the file."""
    (root / "documents").mkdir(parents=True, exist_ok=True)
    font = ImageFont.load_default(size=11)
    data = []
    names = ["Acme Corp", "Globex", "Initech", "Umbrella"]
    for k in range(n):
        image = Image.new("RGB", (168, 112), (250, 250, 245))
        draw = ImageDraw.Draw(image)
        number, company = str(4821 + 13 * k), names[k % len(names)]
        draw.text((8, 8), "INVOICE", fill="black", font=font)
        draw.text((8, 30), f"No: {number}", fill="black", font=font)
        draw.text((8, 50), f"From: {company}", fill="black", font=font)
        image.save(root / "documents" / f"doc{k}.png")
        data.append(
            {
                "questionId": 1000 + 2 * k,
                "question": "What is the invoice number?",
                "image": f"documents/doc{k}.png",
                "answers": [number],
            }
        )
        data.append(
            {
                "questionId": 1001 + 2 * k,
                "question": "Who sent the invoice?",
                "image": f"documents/doc{k}.png",
                "answers": [company, company.upper()],
            }
        )
    path = root / "val_v1.0.json"
    path.write_text(json.dumps({"dataset_name": "docvqa", "dataset_split": "val", "data": data}), encoding="utf-8")
    return path


#: The category names of the paper's MME part (``lmms-lab/MME`` spelling), cycled over the demo images.
MME_CATEGORIES = ("artwork", "celebrity", "code_reasoning")


def write_mme(root: Path, n: int = 4) -> Path:
    """lmms-lab/MME's columns saved with ``save_to_disk``."""
    from datasets import Dataset, Features, Value
    from datasets import Image as ImageFeature

    rows = []
    for k in range(n):
        color = list(COLORS)[k % len(COLORS)]
        image = Image.new("RGB", (112, 112), "white")
        ImageDraw.Draw(image).ellipse([28, 28, 84, 84], fill=COLORS[color])
        for asked, answer in ((color, "Yes"), (list(COLORS)[(k + 1) % len(COLORS)], "No")):
            rows.append(
                {
                    "question_id": f"color/{k}.png",
                    "image": image,
                    "question": f"Is there a {asked} circle in the image? Please answer yes or no.",
                    "answer": answer,
                    "category": MME_CATEGORIES[k % len(MME_CATEGORIES)],
                }
            )
    s = Value("string")
    features = Features({"question_id": s, "image": ImageFeature(), "question": s, "answer": s, "category": s})
    Dataset.from_list(rows, features=features).save_to_disk(str(root))
    return root


def write_sources(root: Path, n: int = 4) -> DemoSources:
    """Write all three sources (``n`` images each) under ``root``; returns {source: path} for ``build``."""
    return {
        "chartqa": str(write_chartqa(root / "chartqa", n)),
        "docvqa": str(write_docvqa(root / "docvqa", n)),
        "mme": str(write_mme(root / "mme", n)),
    }
