"""Readers for DiaVLo's four image-question sources, each in its released format.

- ``llava_bench`` (LLaVA-Bench in-the-wild): a folder with ``questions.jsonl`` (question_id, image,
  text, category), ``answers_gpt4.jsonl`` (question_id, text: the reference answer) and ``images/``.
  Open-ended; the reference answer is the target.
- ``mmbench`` (MMBench): a TSV file (index, question, hint, A..D, answer, category, image as base64).
- ``seed_bench2`` (SEED-Bench-2): ``SEED-Bench_v2_level1_2_3.json`` ({"questions": [{question_id,
  question, choice_a..choice_d, answer, data_id, data_type, question_type_id}]}); image files are
  resolved relative to the JSON's folder. Only single-image questions are kept (videos and
  multi-image items are skipped and counted).
- ``vqav2`` (VQA v2): a folder with ``*_questions.json`` ({"questions": [{image_id, question,
  question_id}]}), ``*_annotations.json`` ({"annotations": [{question_id, answers: [{answer}],
  multiple_choice_answer, answer_type}]}) and the COCO images (``*_<12-digit image_id>.jpg`` anywhere
  below it).

A location ``hub:ORG/NAME[@SPLIT]`` (a Hub id, or a local folder in the Hub's parquet layout) reads
the lmms-lab copies instead (``lmms-lab/llava-bench-in-the-wild``, ``lmms-lab/MMBench`` (config
``en``), ``lmms-lab/SEED-Bench-2``, ``lmms-lab/VQAv2``), whose columns carry the same fields.

Each pair carries an ``image_key``: the key a scene-graph file uses for its image (llava_bench: the
image file name; mmbench: the index; seed_bench2: the data_id; vqav2: the COCO image id).
"""

from __future__ import annotations

import base64
import csv
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.results.jsonl import read_jsonl

SOURCES = ("llava_bench", "mmbench", "seed_bench2", "vqav2")
MULTIPLE_CHOICE, VQA, OPEN = "multiple_choice", "vqa", "open"


@dataclass(frozen=True)
class Pair:
    """One question-answer pair of a source benchmark with its image (a file or bytes)."""

    source: str
    question_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    answers: tuple[str, ...]
    answer_type: str
    category: str
    image_path: str | None
    image_bytes: bytes | None
    image_key: str

    def load_image(self) -> Any:
        """The pair's image as RGB (a one-line error naming the pair when it cannot be read)."""
        from PIL import Image

        try:
            image = Image.open(io.BytesIO(self.image_bytes) if self.image_bytes else str(self.image_path))
            image.load()
        except (OSError, ValueError) as exc:
            raise HarnessError(f"{self.source} {self.question_id}: image cannot be read ({exc})") from None
        return image.convert("RGB")


def read_json(path: Path, option: str, expected: str) -> Any:
    """A JSON file named by a command-line option, with one-line errors naming the expected format."""
    if not path.is_file():
        raise HarnessError(f"{option} {path}: no such file ({expected})")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{option} {path}: not JSON ({exc}); expected {expected}") from None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise HarnessError(f"{path}: missing (expected in LLaVA-Bench's release layout)")
    return read_jsonl(path)


def _read_llava_bench(path: Path) -> list[Pair]:
    """LLaVA-Bench's questions with GPT-4's reference answers (open-ended)."""
    questions = _jsonl(path / "questions.jsonl")
    answers = {str(a["question_id"]): a["text"] for a in _jsonl(path / "answers_gpt4.jsonl")}
    out = []
    for q in questions:
        qid = str(q["question_id"])
        if qid not in answers:
            raise HarnessError(f"{path}: question {qid} has no reference answer in answers_gpt4.jsonl")
        out.append(
            Pair(
                "llava_bench",
                qid,
                q["text"],
                (),
                answers[qid],
                (answers[qid],),
                OPEN,
                q.get("category", ""),
                str(path / "images" / q["image"]),
                None,
                q["image"],
            )
        )
    return out


def _with_hint(hint: Any, question: str) -> str:
    """MMBench's hint (context) goes before the question; pandas writes a missing one as "nan"."""
    return f"{hint}\n{question}" if hint and str(hint) != "nan" else question


def _read_mmbench(path: Path) -> list[Pair]:
    """MMBench's multiple-choice questions from its TSV file (images inline, base64)."""
    if not path.is_file():
        raise HarnessError(f"{path}: MMBench expects its TSV file")
    csv.field_size_limit(sys.maxsize)
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            missing = {"index", "question", "answer", "image", "A", "B"} - set(row)
            if missing:
                raise HarnessError(f"{path}: MMBench TSV lacks column(s) {', '.join(sorted(missing))}")
            options = tuple(row[k] for k in "ABCD" if row.get(k) and row[k].strip() and row[k] != "nan")
            question = _with_hint(row.get("hint"), row["question"])
            try:
                blob = base64.b64decode(row["image"], validate=True)
            except ValueError:
                raise HarnessError(f"{path}: row {row['index']}: image is not base64") from None
            out.append(
                Pair(
                    "mmbench",
                    str(row["index"]),
                    question,
                    options,
                    row["answer"].strip(),
                    (row["answer"].strip(),),
                    MULTIPLE_CHOICE,
                    row.get("category", ""),
                    None,
                    blob,
                    str(row["index"]),
                )
            )
    return out


def _read_seed_bench2(path: Path) -> list[Pair]:
    """SEED-Bench-2's single-image multiple-choice questions (video and multi-image ones skipped)."""
    if not path.is_file():
        raise HarnessError(f"{path}: SEED-Bench-2 expects its questions JSON file")
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for q in data.get("questions", []):
        data_id = q.get("data_id")
        if q.get("data_type", "image") != "image" or not isinstance(data_id, str):
            continue  # video or multi-image question
        options = tuple(q[f"choice_{k}"] for k in "abcd" if q.get(f"choice_{k}"))
        out.append(
            Pair(
                "seed_bench2",
                str(q["question_id"]),
                q["question"],
                options,
                str(q["answer"]).strip(),
                (str(q["answer"]).strip(),),
                MULTIPLE_CHOICE,
                str(q.get("question_type_id", "")),
                str(path.parent / data_id),
                None,
                data_id,
            )
        )
    return out


def _read_vqav2(path: Path) -> list[Pair]:
    """VQA v2's questions with their annotators' answers (questions without an annotation or an image
    in the folder skipped)."""
    q_files, a_files = sorted(path.glob("*questions.json")), sorted(path.glob("*annotations.json"))
    if not q_files or not a_files:
        raise HarnessError(f"{path}: VQA v2 expects *_questions.json and *_annotations.json")
    questions = [q for f in q_files for q in json.loads(f.read_text(encoding="utf-8"))["questions"]]
    annotations = {
        a["question_id"]: a for f in a_files for a in json.loads(f.read_text(encoding="utf-8"))["annotations"]
    }
    images = {p.stem.rsplit("_", 1)[-1]: p for p in path.rglob("*.jpg")}
    out = []
    for q in questions:
        ann = annotations.get(q["question_id"])
        image = images.get(f"{int(q['image_id']):012d}")
        if ann is None or image is None:
            continue
        answers = tuple(a["answer"] for a in ann["answers"])
        out.append(
            Pair(
                "vqav2",
                str(q["question_id"]),
                q["question"],
                (),
                ann["multiple_choice_answer"],
                answers,
                VQA,
                ann.get("answer_type", ""),
                str(image),
                None,
                str(q["image_id"]),
            )
        )
    return out


HUB_SPLITS = {"llava_bench": "train", "mmbench": "dev", "seed_bench2": "test", "vqav2": "validation"}


def _image_bytes(value: Any) -> bytes:
    """Encoded bytes of a datasets Image value (decoded PIL image or {"bytes", "path"})."""
    if isinstance(value, list):
        value = value[0] if len(value) == 1 else None
    if isinstance(value, dict) and value.get("bytes"):
        data: bytes = value["bytes"]
        return data
    if hasattr(value, "save"):
        buf = io.BytesIO()
        value.convert("RGB").save(buf, format="PNG")
        return buf.getvalue()
    raise HarnessError("a Hub row has no single image")


def read_hub(name: str, location: str) -> list[Pair]:
    """Pairs from an lmms-lab copy of a source (module docstring)."""
    from datasets import load_dataset

    repo, _, split = location.removeprefix("hub:").partition("@")
    kwargs = {"name": "en"} if name == "mmbench" and not Path(repo).is_dir() else {}
    try:
        rows = load_dataset(repo, split=split or HUB_SPLITS[name], **kwargs)
    except Exception as exc:
        raise HarnessError(f"{name}: cannot load {repo!r} ({str(exc).splitlines()[0]})") from None
    to_pair = {"llava_bench": _hub_llava_bench, "vqav2": _hub_vqav2}.get(name, _hub_multiple_choice)
    return [to_pair(name, row, str(row.get("question_id", row.get("index")))) for row in rows if _hub_usable(name, row)]


def _hub_usable(name: str, row: dict[str, Any]) -> bool:
    """False for SEED-Bench-2's video questions and questions over several images."""
    if name != "seed_bench2":
        return True
    images = row["image"] if isinstance(row["image"], list) else [1]
    return row.get("data_type", "image") == "image" and len(images) == 1


def _hub_llava_bench(name: str, row: dict[str, Any], qid: str) -> Pair:
    """An lmms-lab LLaVA-Bench row: an open question with GPT-4's answer."""
    return Pair(
        name,
        qid,
        row["question"],
        (),
        row["gpt_answer"],
        (row["gpt_answer"],),
        OPEN,
        row.get("category", ""),
        None,
        _image_bytes(row["image"]),
        str(row.get("image_id", qid)),
    )


def _hub_vqav2(name: str, row: dict[str, Any], qid: str) -> Pair:
    """An lmms-lab VQA v2 row: the annotators' answers, the most common one as the answer."""
    answers = tuple(a["answer"] for a in row["answers"])
    return Pair(
        name,
        qid,
        row["question"],
        (),
        row["multiple_choice_answer"],
        answers,
        VQA,
        row.get("answer_type", ""),
        None,
        _image_bytes(row["image"]),
        str(row["image_id"]),
    )


def _hub_multiple_choice(name: str, row: dict[str, Any], qid: str) -> Pair:
    """An lmms-lab MMBench or SEED-Bench-2 row: the hint before the question, the options A-D."""
    keys = ("A", "B", "C", "D") if name == "mmbench" else tuple(f"choice_{k}" for k in "abcd")
    options = tuple(str(row[k]) for k in keys if row.get(k) and str(row[k]) != "nan")
    question = _with_hint(row.get("hint"), row["question"])
    data_id = row.get("data_id")
    key = data_id[0] if isinstance(data_id, list) and data_id else str(data_id or qid)
    answer = str(row["answer"]).strip()
    category = str(row.get("category", row.get("question_type_id", "")))
    return Pair(
        name,
        qid,
        question,
        options,
        answer,
        (answer,),
        MULTIPLE_CHOICE,
        category,
        None,
        _image_bytes(row["image"]),
        key,
    )


READERS = {
    "llava_bench": _read_llava_bench,
    "mmbench": _read_mmbench,
    "seed_bench2": _read_seed_bench2,
    "vqav2": _read_vqav2,
}


def read_source(name: str, location: str) -> list[Pair]:
    """The pairs of source ``name`` from a local copy in its release format, or ``hub:`` a Hub dataset."""
    if name not in READERS:
        raise HarnessError(f"unknown DiaVLo source {name!r}; sources: {', '.join(SOURCES)}")
    if location.startswith("hub:"):
        return read_hub(name, location)
    path = Path(location).expanduser()
    if not path.exists():
        raise HarnessError(f"{name}: {path} does not exist (pass a local copy in the source's release format)")
    return READERS[name](path)


def parse_sources(spec: str | tuple[str, ...]) -> dict[str, str]:
    """``llava_bench=DIR,mmbench=FILE.tsv`` (or a tuple of such items) into {source: location}."""
    items = spec.split(",") if isinstance(spec, str) else [i for part in spec for i in part.split(",")]
    out = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        name, sep, location = item.partition("=")
        if not sep or name not in SOURCES:
            raise HarnessError(f"--sources: expected NAME=PATH with NAME in {', '.join(SOURCES)}, got {item!r}")
        out[name] = location
    if not out:
        raise HarnessError(f"--sources is required: NAME=PATH,... with NAME in {', '.join(SOURCES)}")
    return out
