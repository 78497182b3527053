"""The MIST demo source (``harness build mist --demo``): AdMIRe-format rows of our own sentences,
placeholder images and human panels, small enough to build and run offline in seconds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from PIL import Image, ImageDraw

SENTENCES = {
    "elbow grease": (
        "It took a lot of elbow grease to get the old engine running again.",
        "The mechanic sold a jar of elbow grease labelled for squeaky joints.",
    ),
    "night owl": (
        "She is a night owl who writes her best chapters after midnight.",
        "A night owl hooted from the barn roof while we packed the car.",
    ),
    "big fish": (
        "After the merger he became a big fish in the regional market.",
        "The anglers photographed the big fish before releasing it.",
    ),
    "hot potato": (
        "The pension reform became a political hot potato that nobody wanted to touch.",
        "Careful, that hot potato just came out of the oven.",
    ),
    "cold feet": (
        "He got cold feet the night before signing the lease.",
        "After the winter hike I had cold feet for an hour.",
    ),
    "couch potato": (
        "My brother turns into a couch potato every weekend.",
        "The child drew a smiling couch potato sitting on a tiny sofa.",
    ),
    "red tape": ("Endless red tape delayed the permit for months.", None),
    "white elephant": (
        "The new stadium is a white elephant that costs millions to maintain.",
        "The circus had a white elephant that painted pictures.",
    ),
}


def _slug(compound: str) -> str:
    return compound.replace(" ", "_")


def write_admire(folder: Path) -> tuple[Path, Path, Path]:
    """(rows TSV, images folder, humans JSON). 'red tape' lacks a literal row and 'white elephant'
    lacks its literal image, so six compounds are eligible."""
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows = []
    for compound, (idiomatic, literal) in SENTENCES.items():
        names = {kind: f"{_slug(compound)}_{kind}.png" for kind in ("idiomatic", "literal", "distractor")}
        for kind in names:
            if compound == "white elephant" and kind == "literal":
                continue
            image = Image.new("RGB", (96, 64), (240, 240, 240) if kind != "literal" else (200, 230, 255))
            ImageDraw.Draw(image).text((4, 24), f"{compound[:10]} {kind[:3]}", fill=(0, 0, 0))
            image.save(images / names[kind])
        for kind, sentence in (("idiomatic", idiomatic), ("literal", literal)):
            if sentence is None:
                continue
            other = "literal" if kind == "idiomatic" else "idiomatic"
            order = [names[kind], names["distractor"], names[other]]
            rows.append(
                {
                    "compound": compound,
                    "subset": "Fixture",
                    "sentence_type": kind,
                    "sentence": sentence,
                    "expected_order": str(order),
                }
            )
    tsv = folder / "admire.tsv"
    with tsv.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    humans = []
    for k, compound in enumerate(SENTENCES):
        for j in range(3):
            humans.append(
                {
                    "annotator": f"blind_{j}",
                    "panel": "blind",
                    "condition": "none",
                    "compound": compound,
                    "label": "Fully Figurative" if (k + (j == 2)) % 2 == 0 else "FL",
                }
            )
            humans.append(
                {
                    "annotator": f"informed_{j}",
                    "panel": "informed",
                    "condition": "aligned",
                    "compound": compound,
                    "label": str((k + j) % 4),
                }
            )
    human_file = folder / "humans.json"
    human_file.write_text(json.dumps(humans), encoding="utf-8")
    return tsv, images, human_file
