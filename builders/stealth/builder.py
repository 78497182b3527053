"""``harness build stealth``: the short, long, vqa and ocr subsets, rendered on all cores."""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from builders.options import option
from builders.stealth import conditions as C
from builders.stealth import render
from builders.stealth.text import long_designs, short_designs
from harness.errors import HarnessError
from harness.fonts import file_sha256, resolve_font
from harness.protocols.stealth.palette import OCR_WORDS
from harness.protocols.stealth.rows import StealthRow, WordBox

REPO_ID = "vlm-audit/stealth"
SUBSETS = ("short", "long", "vqa", "ocr")
N_SENTENCES = 100
N_QUESTIONS = 100
SENTENCE_FONT_SIZE = 28
VQA_FONT_SIZES = (20, 18, 16)
DEFAULT_SQUAD = "rajpurkar/squad"


@functools.cache
def _font(path: str, size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(path, size)


@functools.cache
def _delta_e(rgb: tuple[int, int, int]) -> float:
    return render.delta_e_2000(rgb)


def render_sample(spec: dict[str, Any]) -> list[StealthRow]:
    """All conditions of one sample: one layout, one image per condition (runs in a worker)."""
    sizes = spec["font_sizes"]
    for size in sizes:  # VQA texts shrink the font until the passage fits
        font = _font(spec["font_path"], size)
        try:
            placed = render.layout(spec["words"], font)
            break
        except ValueError:
            if size == sizes[-1]:
                raise
    roles = [p.role for p in placed]
    boxes = [WordBox(p.text, p.role, list(p.box)) for p in placed]
    canvas = render.Canvas(placed, font)
    rows = []
    for cond in spec["conditions"]:
        colors = C.word_colors(roles, cond)
        image = canvas.draw(colors)
        gray = all(c[0] == c[1] == c[2] for c in colors)
        styled = [p.box for p, c in zip(placed, colors, strict=True) if c != C.BLACK] or [p.box for p in placed]
        # The fill color is exact on any fully covered glyph pixel: the three widest words suffice.
        widest = sorted(styled, key=lambda b: b[2] - b[0], reverse=True)[:3]
        measured = render.measured_color(image, widest) or C.BLACK
        rows.append(
            StealthRow(
                **spec["fields"],
                **{
                    k: cond[k]
                    for k in ("condition", "colored_polarity", "hue", "intensity", "rgb", "gray_level", "salient")
                },
                id=f"{spec['fields']['sample_id']}-{cond['condition']}",
                font_size=size,
                word_boxes=boxes,
                delta_e=_delta_e(measured),
                measured_rgb=list(measured),
                image={"bytes": render.png_bytes(image, gray=gray), "path": None},
            )
        )
    return rows


def _fields(**kw: Any) -> dict[str, Any]:
    keys = (
        "sample_id",
        "subset",
        "text",
        "question",
        "answers",
        "decoy",
        "polarity",
        "first_half_polarity",
        "second_half_polarity",
        "word",
        "font_sha256",
        "decoy_embedder",
    )
    return {k: kw.get(k, [] if k == "answers" else None) for k in keys}


def sentence_specs(
    subset: str,
    rng: random.Random,
    font: str,
    sha: str,
    n: int = N_SENTENCES,
) -> list[dict[str, Any]]:
    """The render specs of the sentiment sentences: ``short`` ones of one polarity, ``long`` ones whose
    halves have opposite polarities."""
    designs = short_designs(n, rng) if subset == "short" else long_designs(n, rng)
    specs = []
    for k, (polarity, words) in enumerate(designs):
        text = " ".join(w.text for w in words)
        if subset == "short":
            fields = _fields(sample_id=f"short-{k:03d}", subset=subset, text=text, polarity=polarity, font_sha256=sha)
        else:
            other = "negative" if polarity == "positive" else "positive"
            fields = _fields(
                sample_id=f"long-{k:03d}",
                subset=subset,
                text=text,
                first_half_polarity=polarity,
                second_half_polarity=other,
                font_sha256=sha,
            )
        specs.append(
            {
                "words": [(w.text, w.role) for w in words],
                "font_path": font,
                "font_sizes": (SENTENCE_FONT_SIZE,),
                "conditions": C.sentiment_conditions(),
                "fields": fields,
            }
        )
    return specs


def _vqa_specs(
    squad_source: str, seed: int, font: str, sha: str, embedder: str | None, n: int = N_QUESTIONS
) -> list[dict[str, Any]]:
    """The render specs of the VQA subset: SQuAD context windows, each with the context word the embedder
    finds closest to the answer as its decoy (None when there is no candidate)."""
    from builders.stealth import squad
    from builders.stealth.decoy import load_embedder, most_similar

    examples = squad.select(squad.load_squad(squad_source), n, seed)
    windows = [
        squad.window_context(ex["context"], ex["answers"]["text"][0], ex["answers"]["answer_start"][0])
        for ex in examples
    ]
    candidates = [squad.decoy_candidates(w) for w in windows]
    name, embed = load_embedder(embedder)
    answers = [ex["answers"]["text"][0] for ex in examples]
    best = most_similar(embed, answers, [[c for _, c in cands] for cands in candidates])
    specs = []
    for k, (ex, window) in enumerate(zip(examples, windows, strict=True)):
        choice = best[k]
        decoy_index, decoy = candidates[k][choice] if choice is not None else (None, None)
        words = [("Question:", "question")] + [(w, "question") for w in ex["question"].split()]
        words.append((render.BREAK, "break"))
        for j, (word, ws, we) in enumerate(squad.words_with_spans(window.text)):
            role = "answer" if we > window.answer_start and ws < window.answer_end else "context"
            words.append((word, "decoy" if j == decoy_index else role))
        fields = _fields(
            sample_id=f"vqa-{k:03d}",
            subset="vqa",
            text=window.text,
            question=ex["question"],
            answers=list(ex["answers"]["text"]),
            decoy=decoy,
            font_sha256=sha,
            decoy_embedder=name,
        )
        specs.append(
            {
                "words": words,
                "font_path": font,
                "font_sizes": VQA_FONT_SIZES,
                "conditions": C.vqa_conditions(),
                "fields": fields,
            }
        )
    return specs


def _ocr_specs(font: str, sha: str) -> list[dict[str, Any]]:
    """The render specs of the OCR subset: each word at each font size."""
    specs = []
    for word in OCR_WORDS:
        for size in C.OCR_FONT_SIZES:
            conds = [c for c in C.ocr_conditions() if c["font_size"] == size]
            fields = _fields(sample_id=f"ocr-{word}-{size}", subset="ocr", text=word, word=word, font_sha256=sha)
            specs.append(
                {
                    "words": [(word, "word")],
                    "font_path": font,
                    "font_sizes": (size,),
                    "conditions": conds,
                    "fields": fields,
                }
            )
    return specs


@dataclass(frozen=True)
class Options:
    """What ``harness build stealth`` takes; ``sentences`` and ``questions`` shrink the set for smoke builds."""

    seed: int = option("sampling seed of the sentences and questions", 0)
    font: str | None = option("font file to render with (default: found in installed packages)")
    squad: str = option("SQuAD source of the vqa subset: Hub id, folder or file", DEFAULT_SQUAD)
    subsets: tuple[str, ...] = option("subsets to build", SUBSETS, comma=True)
    workers: int | None = option("rendering processes (default: all cores)")
    embedder: str | None = option("embedder picking the vqa decoys (default: the first that loads offline)")
    sentences: int = option("sentences per sentiment subset", N_SENTENCES)
    questions: int = option("questions of the vqa subset", N_QUESTIONS)


def build(out: Path, options: Options) -> Path:
    """Render the requested subsets into ``out`` (Hub layout: one split per subset, plus the card)."""
    from datasets import Dataset, DatasetDict

    from builders.publish import write_hub_folder

    seed, subsets, sentences, questions = options.seed, options.subsets, options.sentences, options.questions
    unknown = set(subsets) - set(SUBSETS)
    if unknown:
        raise HarnessError(f"unknown stealth subset(s) {', '.join(sorted(unknown))}; choose from {', '.join(SUBSETS)}")
    font_path = resolve_font("DroidSans.ttf", options.font)
    sha = file_sha256(font_path)
    specs: dict[str, list[dict[str, Any]]] = {}
    for subset in subsets:  # each subset draws from its own seeded stream: the same whatever else is built
        if subset in ("short", "long"):
            specs[subset] = sentence_specs(subset, random.Random(f"{seed}-{subset}"), str(font_path), sha, sentences)
        elif subset == "ocr":
            specs[subset] = _ocr_specs(str(font_path), sha)
    rendered_first = [s for s in subsets if s != "vqa"]
    total = sum(len(spec["conditions"]) for s in rendered_first for spec in specs[s])
    total += questions * len(C.vqa_conditions()) if "vqa" in subsets else 0
    rows: dict[str, list[StealthRow]] = {s: [] for s in subsets}
    bar = tqdm(total=total, unit="image", desc="render stealth")
    with multiprocessing.get_context("fork").Pool(options.workers or os.cpu_count() or 1) as pool:
        jobs = [(s, spec) for s in rendered_first for spec in specs[s]]
        first = pool.imap(render_sample, [spec for _, spec in jobs], chunksize=4)
        if "vqa" in subsets:  # prepared (SQuAD, decoy embeddings) while the workers render the rest
            specs["vqa"] = _vqa_specs(options.squad, seed, str(font_path), sha, options.embedder, questions)
            jobs += [("vqa", spec) for spec in specs["vqa"]]
        second = pool.imap(render_sample, specs.get("vqa", []), chunksize=2)
        for (subset, _), rendered in zip(jobs, itertools.chain(first, second), strict=True):
            rows[subset].extend(rendered)
            bar.update(len(rendered))
    bar.close()
    feats = StealthRow.features()
    dataset = DatasetDict({s: Dataset.from_list([r.to_dict() for r in rows[s]], features=feats) for s in subsets})
    counts = {s: len(rows[s]) for s in subsets}
    embedder_used = next((r.decoy_embedder for r in rows.get("vqa", [])), "not built")
    card_vars = {
        "seed": seed,
        "font_sha256": sha,
        "decoy_embedder": embedder_used,
        **{f"n_{s}": counts.get(s, 0) for s in SUBSETS},
    }
    preview = _preview(rows)
    return write_hub_folder(dataset, out, "stealth", card_vars, extra_files={"preview.png": preview})


def _preview(rows: dict[str, list[StealthRow]]) -> bytes:
    """A contact sheet of a few conditions of the first sample of each subset, for the card."""
    import io

    from PIL import Image

    picks = []
    for subset, wanted in (
        ("short", ("baseline", "positive-red-136", "negative-blue-136")),
        ("long", ("baseline", "negative-magenta-85")),
        ("vqa", ("global-128", "answer-192", "decoy-192")),
    ):
        by_cond = {r.condition: r for r in rows.get(subset, []) if r.sample_id.endswith("-000")}
        picks += [by_cond[c] for c in wanted if c in by_cond]
    tiles = [Image.open(io.BytesIO(r.image["bytes"])).resize((400, 300)) for r in picks] or [
        Image.new("RGB", (400, 300), "white")
    ]
    sheet = Image.new("RGB", (400 * 4, 300 * ((len(tiles) + 3) // 4)), "white")
    for k, tile in enumerate(tiles):
        sheet.paste(tile, ((k % 4) * 400, (k // 4) * 300))
    buffer = io.BytesIO()
    sheet.save(buffer, format="PNG")
    return buffer.getvalue()
