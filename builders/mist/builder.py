"""``harness build mist``: the Misleading-Image Stress Test from AdMIRe-format sources.

Inputs (local paths; ``--admire`` may repeat, e.g. the English and Extended Evaluation files):
- AdMIRe subtask-A rows: ``compound``, ``subset``, ``sentence_type`` (idiomatic / literal),
  ``sentence``, ``expected_order`` (the compound's image file names, best match for the sentence first),
  as TSV/CSV files or a folder ``load_dataset`` reads;
- ``--images DIR`` holding those image files;
- ``--humans FILE`` (JSON list or CSV) with ``annotator``, ``panel`` (informed / blind), ``condition``
  (none / aligned / misleading: what that annotator saw), ``compound`` and ``label`` (a scale name,
  abbreviation or 0-3).

Selection, as the paper describes it: keep compounds for which both readings exist with an image
(one idiomatic and one literal row whose top image file is present); sort them, ``random.seed(seed)``
(123 by default) and ``random.sample`` ``n`` of them; the first half keep their idiomatic sentence
(figurative items), the second half their literal one. The aligned image is the top image of the
item's own row, the misleading image the top image of the other reading's row.
"""

from __future__ import annotations

import ast
import csv
import json
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from builders.options import option
from builders.publish import write_hub_folder
from harness.errors import HarnessError
from harness.protocols.mist.metrics import LABELS, majority_label, parse_label
from harness.protocols.mist.rows import HumanLabel, MistRow

REPO_ID = "vlm-audit/mist"
PANELS = ("informed", "blind")
CONDITIONS = ("none", "aligned", "misleading")


def _read_rows(source: str) -> list[dict[str, Any]]:
    path = Path(source).expanduser()
    if path.is_file():
        delimiter = "\t" if path.suffix in {".tsv", ".txt"} else ","
        with path.open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh, delimiter=delimiter))
    try:
        from datasets import load_dataset

        return list(load_dataset(str(path) if path.is_dir() else source, split="train"))
    except Exception as exc:
        raise HarnessError(f"AdMIRe source {source!r} cannot be read ({str(exc).splitlines()[0]})") from None


def _order(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        parsed = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        raise HarnessError(f"expected_order {value!r} is not a list of image names") from None
    return [str(v) for v in parsed]


def _label(value: Any, where: str) -> int:
    text = str(value).strip()
    if text.isdigit() and int(text) < len(LABELS):
        return int(text)
    parsed = parse_label(text)
    if parsed is None:
        raise HarnessError(f"{where}: human label {value!r} is not on the scale ({', '.join(LABELS)})")
    return parsed


def read_humans(path: str) -> dict[str, list[HumanLabel]]:
    """Compound -> [{annotator, panel, condition, label}] from a JSON list or a CSV file."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise HarnessError(f"--humans {path}: no such file")
    if file.suffix == ".json":
        rows = json.loads(file.read_text(encoding="utf-8"))
    else:
        with file.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    out: dict[str, list[HumanLabel]] = {}
    for k, row in enumerate(rows):
        where = f"{file}: row {k + 1}"
        missing = {"annotator", "panel", "condition", "compound", "label"} - set(row)
        if missing:
            raise HarnessError(f"{where}: missing {', '.join(sorted(missing))}")
        if row["panel"] not in PANELS or row["condition"] not in CONDITIONS:
            raise HarnessError(f"{where}: panel must be one of {PANELS} and condition one of {CONDITIONS}")
        out.setdefault(row["compound"], []).append(
            HumanLabel(str(row["annotator"]), row["panel"], row["condition"], _label(row["label"], where))
        )
    return out


def select_items(rows: list[dict[str, Any]], images: Path, n: int, seed: int) -> list[dict[str, Any]]:
    """The paper's selection rule (module docstring), deterministic for a seed."""
    readings: dict[str, dict[str, dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (r["compound"], r.get("subset", ""), r["sentence"])):
        kind = row["sentence_type"].strip().lower()
        if kind not in {"idiomatic", "literal"}:
            continue
        top = _order(row["expected_order"])[:1]
        if top and (images / top[0]).is_file():
            readings.setdefault(row["compound"], {}).setdefault(kind, {**row, "top_image": top[0]})
    eligible = sorted(c for c, kinds in readings.items() if len(kinds) == 2)
    if not eligible:
        raise HarnessError("no compound has both an idiomatic and a literal reading with its image present")
    random.seed(seed)
    chosen = random.sample(eligible, min(n, len(eligible)))
    half = (len(chosen) + 1) // 2
    items = []
    for k, compound in enumerate(chosen):
        sense, kind, other = ("figurative", "idiomatic", "literal") if k < half else ("literal", "literal", "idiomatic")
        own, opposite = readings[compound][kind], readings[compound][other]
        items.append(
            {
                "compound": compound,
                "sense": sense,
                "sentence": own["sentence"],
                "subset": own.get("subset", ""),
                "aligned_image": own["top_image"],
                "misleading_image": opposite["top_image"],
            }
        )
    return items


@dataclass(frozen=True)
class Options:
    """What ``harness build mist`` takes (module docstring)."""

    seed: int = option("selection seed (the paper's 123)", 123)
    admire: tuple[str, ...] = option("AdMIRe-format rows: TSV/CSV file or folder", ())
    images: str | None = option("folder with the AdMIRe image files")
    humans: str | None = option("human annotations (JSON list or CSV)")
    n: int = option("number of items to sample", 200)
    demo: bool = option("build from a small self-made AdMIRe-format source", False)


def build(out: Path, options: Options) -> Path:
    """Build the MIST items with their two images and the human panels' labels into ``out``
    (``demo``: from the self-made AdMIRe-format source of :mod:`builders.mist.demo`)."""
    from datasets import Dataset, DatasetDict

    if options.demo:
        from builders.demo import demo_folder
        from builders.mist.demo import write_admire

        with demo_folder("mist", admire=options.admire, images=options.images, humans=options.humans) as tmp:
            tsv, image_dir, human_file = write_admire(tmp)
            return build(
                out, replace(options, demo=False, admire=(str(tsv),), images=str(image_dir), humans=str(human_file))
            )
    if not options.admire or options.images is None or options.humans is None:
        raise HarnessError(
            "mist needs --admire SOURCE (repeatable), --images DIR and --humans FILE "
            "(or --demo for a small self-made source)"
        )
    image_dir = Path(options.images).expanduser()
    if not image_dir.is_dir():
        raise HarnessError(f"--images {image_dir}: not a folder")
    rows = [row for source in options.admire for row in _read_rows(source)]
    items = select_items(rows, image_dir, options.n, options.seed)
    panels = read_humans(options.humans)
    records = []
    for k, item in enumerate(items):
        labels = panels.get(item["compound"], [])
        blind_none = [h.label for h in labels if h.condition == "none"]
        records.append(
            MistRow(
                id=f"mist-{k:03d}",
                compound=item["compound"],
                sense=item["sense"],
                sentence=item["sentence"],
                subset=item["subset"],
                aligned_image=str(image_dir / item["aligned_image"]),
                misleading_image=str(image_dir / item["misleading_image"]),
                human_labels=labels,
                human_majority=_or_minus_one(majority_label(blind_none or [h.label for h in labels])),
            )
        )
    dataset = DatasetDict({"test": Dataset.from_list([r.to_dict() for r in records], features=MistRow.features())})
    figurative = sum(r.sense == "figurative" for r in records)
    annotators = {h.annotator for r in records for h in r.human_labels}
    card_vars = {
        "n_items": len(records),
        "n_figurative": figurative,
        "n_literal": len(records) - figurative,
        "seed": options.seed,
        "n_annotators": len(annotators),
    }
    return write_hub_folder(dataset, out, "mist", card_vars)


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else value
