"""SQuAD examples for the VQA subset: selection, answer-centred context windows, decoy words."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

WINDOW = 600
_WORD = re.compile(r"\S+")
_STOP = set(
    "the a an and or of to in on at by for with from as is was were are be been it its this that "
    "which who whom whose what when where why how than then into onto over under also not but".split()
)


def load_squad(source: str) -> Any:
    """The SQuAD train split from a Hub id, a ``load_dataset`` folder, a HF-format json/jsonl/parquet
    file, or the official SQuAD v1.1 JSON (``{"data": [{"paragraphs": [...]}]}``)."""
    from datasets import Dataset, load_dataset

    path = Path(source).expanduser()
    try:
        if path.is_file() and path.suffix == ".json":
            raw = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(raw, dict) and "data" in raw:
                return Dataset.from_list(list(_official_rows(raw)))
            return load_dataset("json", data_files=str(path), split="train")
        if path.is_file():
            kind = "parquet" if path.suffix == ".parquet" else "json"
            return load_dataset(kind, data_files=str(path), split="train")
        if path.is_dir():
            return load_dataset(str(path), split="train")
        return load_dataset(source, split="train")
    except (OSError, ValueError, ConnectionError) as exc:
        raise HarnessError(
            f"SQuAD source {source!r} cannot be read ({str(exc).splitlines()[0]}); offline, pass --squad with a "
            "local SQuAD file (official v1.1 JSON or HF rows), or build --subsets short,long,ocr"
        ) from None


def _official_rows(raw: dict[str, Any]) -> Any:
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield {
                    "id": qa["id"],
                    "title": article.get("title", ""),
                    "context": paragraph["context"],
                    "question": qa["question"],
                    "answers": {
                        "text": [a["text"] for a in qa["answers"]],
                        "answer_start": [a["answer_start"] for a in qa["answers"]],
                    },
                }


def select(squad: Any, n: int, seed: int) -> Any:
    """Shuffle once with ``seed`` and take the first ``n`` (the paper's selection)."""
    if len(squad) < n:
        raise HarnessError(f"SQuAD source has {len(squad)} examples; the VQA subset needs {n}")
    return squad.shuffle(seed=seed).select(range(n))


@dataclass(frozen=True)
class Window:
    """The context clipped around the first gold answer; answer offsets are relative to ``text``."""

    text: str
    answer_start: int
    answer_end: int


def window_context(context: str, answer: str, answer_start: int, size: int = WINDOW) -> Window:
    """At most ``size`` characters centred on the first gold span, clipped to word boundaries."""
    end_of_answer = answer_start + len(answer)
    if len(context) <= size:
        return Window(context, answer_start, end_of_answer)
    start = max(0, answer_start - (size - len(answer)) // 2)
    end = min(len(context), start + size)
    start = max(0, end - size)
    if start > 0 and not context[start - 1].isspace():  # drop a partial first word
        nxt = context.find(" ", start)
        start = nxt + 1 if 0 <= nxt < answer_start else start
    if end < len(context) and not context[end].isspace():  # drop a partial last word
        prev = context.rfind(" ", 0, end)
        end = prev if prev >= end_of_answer else end
    text = context[start:end]
    lead = len(text) - len(text.lstrip())
    return Window(text.strip(), answer_start - start - lead, end_of_answer - start - lead)


def words_with_spans(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of each whitespace-separated word of ``text``."""
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def decoy_candidates(window: Window) -> list[tuple[int, str]]:
    """(word index, cleaned word) for context words outside the answer span that could be a decoy."""
    answer_text = window.text[window.answer_start : window.answer_end]
    answer_words = {w.lower().strip(".,;:!?\"'()[]") for w in answer_text.split()}
    out = []
    for k, (word, start, end) in enumerate(words_with_spans(window.text)):
        clean = word.strip(".,;:!?\"'()[]")
        if end > window.answer_start and start < window.answer_end:
            continue
        if len(clean) < 3 or clean.lower() in _STOP or clean.lower() in answer_words or not clean[0].isalnum():
            continue
        out.append((k, clean))
    return out
