"""Read ChartQA, DocVQA and MME items from their published formats into one row shape.

Each source is a Hub id or a local copy:

- ChartQA: the GitHub release (a JSON list of ``{"imgname", "query", "label"}`` beside a ``png/``
  folder, e.g. ``ChartQA Dataset/test/test_human.json``) or a Hub/saved dataset with ``image``,
  ``query`` (or ``question``) and ``label`` (or ``answer``; a string or a list);
- DocVQA: the official JSON (``{"data": [{"questionId", "question", "image", "answers"}]}``, image paths
  relative to the file) or a Hub/saved dataset (``lmms-lab/DocVQA``: ``questionId``, ``question``,
  ``answers``, ``image``);
- MME: a Hub/saved dataset (``lmms-lab/MME``: ``question_id``, ``image``, ``question`` ending in
  "Please answer yes or no.", ``answer`` Yes/No, ``category``).

Rows come back as ``{"uid", "source", "question", "answers", "category", "image"}`` (a decoded RGB
PIL image), sorted by ``uid`` so a selection seed picks the same items on every machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

#: The split a Hub copy is read from (DocVQA's test answers are hidden, so validation).
HUB_SPLITS = {"chartqa": "test", "docvqa": "validation", "mme": "test"}
DEFAULT_SOURCES = {"chartqa": "HuggingFaceM4/ChartQA", "docvqa": "lmms-lab/DocVQA", "mme": "lmms-lab/MME"}


def _open_image(value: Any, base: Path | None, where: str) -> Any:
    from PIL import Image

    try:
        if hasattr(value, "convert"):
            return value.convert("RGB")
        if isinstance(value, dict) and value.get("bytes"):
            import io

            return Image.open(io.BytesIO(value["bytes"])).convert("RGB")
        path = Path(value["path"] if isinstance(value, dict) else str(value))
        if not path.is_absolute() and base is not None:
            path = base / path
        with Image.open(path) as im:
            return im.convert("RGB")
    except (OSError, KeyError, TypeError) as exc:
        raise HarnessError(f"{where}: cannot open its image ({exc})") from None


def _answers(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            if isinstance(parsed, list):
                return [str(v) for v in parsed]
        except json.JSONDecodeError:
            pass
        return [value]
    return [str(v) for v in value]


def _load_records(source: str, kind: str) -> tuple[list[dict[str, Any]], Path | None]:
    path = Path(source).expanduser()
    if path.is_file() and path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        records = data["data"] if isinstance(data, dict) and "data" in data else data
        if not isinstance(records, list):
            raise HarnessError(f'{source}: expected a JSON list of items or {{"data": [...]}}')
        return records, path.parent
    try:
        from datasets import load_dataset, load_from_disk

        if path.is_dir() and any((path / f).is_file() for f in ("dataset_dict.json", "dataset_info.json")):
            loaded = load_from_disk(str(path))
        else:
            loaded = load_dataset(str(path) if path.is_dir() else source)
        if hasattr(loaded, "keys"):
            split = HUB_SPLITS[kind] if HUB_SPLITS[kind] in loaded else next(iter(loaded.keys()))
            loaded = loaded[split]
        return list(loaded), path if path.is_dir() else None
    except HarnessError:
        raise
    except Exception as exc:
        raise HarnessError(f"{kind} source {source!r} cannot be read ({str(exc).splitlines()[0]})") from None


def _chartqa_png(rec: dict[str, Any], base: Path | None) -> Path | None:
    """The GitHub release keeps images in ``png/`` beside the JSON file."""
    if "imgname" not in rec or base is None:
        return None
    name: str = rec["imgname"]
    nested = base / "png" / name
    return nested if nested.is_file() else base / name


def _field(row: dict[str, Any], names: tuple[str, ...], where: str) -> Any:
    for name in names:
        if name in row and row[name] is not None:
            return row[name]
    raise HarnessError(f"{where}: missing field {' / '.join(names)}")


def read_source(kind: str, source: str) -> list[dict[str, Any]]:
    """All usable rows of one source, in the unified shape (see the module docstring)."""
    records, base = _load_records(source, kind)
    rows: list[dict[str, Any]] = []
    for k, rec in enumerate(records):
        where = f"{kind} source {source}: row {k}"
        question = str(_field(rec, ("query", "question"), where))
        if kind == "chartqa":
            uid = str(rec.get("imgname", k)) + "|" + question
            image_value = rec.get("image") or _chartqa_png(rec, base)
            answers = _answers(_field(rec, ("label", "answer"), where))
            category = str(rec.get("human_or_machine", rec.get("type", "")))
        elif kind == "docvqa":
            uid = str(_field(rec, ("questionId", "question_id"), where))
            image_value = _field(rec, ("image",), where)
            answers = _answers(_field(rec, ("answers", "answer"), where))
            category = ", ".join(_answers(rec.get("question_types", [])))
        elif kind == "mme":
            uid = str(rec.get("question_id", k)) + "|" + question
            image_value = _field(rec, ("image",), where)
            answers = [str(_field(rec, ("answer",), where)).strip()]
            if answers[0].lower() not in {"yes", "no"}:
                raise HarnessError(f"{where}: MME answers are Yes or No, got {answers[0]!r}")
            category = str(rec.get("category", ""))
        else:
            raise HarnessError(f"unknown source kind {kind!r}")
        if image_value is None:
            raise HarnessError(f"{where}: no image")
        answers = [a for a in answers if a.strip()]
        if not answers:
            raise HarnessError(f"{where}: no reference answer")
        rows.append(
            {
                "uid": uid,
                "source": kind,
                "question": question,
                "answers": answers,
                "category": category,
                "image": (image_value, base, where),
            }
        )
    rows.sort(key=lambda r: r["uid"])
    return rows


def open_row_image(row: dict[str, Any]) -> Any:
    """Decode a row's image (deferred so only selected items are opened)."""
    value, base, where = row["image"]
    return _open_image(value, base, where)
