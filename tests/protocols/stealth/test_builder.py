"""The Stealth builder: counts, pixel-exact styling, condition isolation, Delta E, clear errors."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from builders.stealth import conditions as C
from builders.stealth.render import delta_e_2000
from builders.stealth.squad import decoy_candidates, window_context
from harness.errors import HarnessError


@pytest.fixture(scope="module")
def stealth(stealth_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    from datasets import load_dataset

    return load_dataset(str(stealth_dir), cache_dir=str(tmp_path_factory.mktemp("hf-cache")))


def pixels(row: dict) -> np.ndarray:
    return np.asarray(row["image"].convert("RGB"), dtype=np.int32)


def rows_of(split, sample_id: str) -> dict[str, dict]:
    return {r["condition"]: r for r in split if r["sample_id"] == sample_id}


def test_counts_and_splits(stealth) -> None:
    assert set(stealth) == {"short", "long", "vqa", "ocr"}
    assert (len(stealth["short"]), len(stealth["long"]), len(stealth["vqa"])) == (3 * 37, 3 * 37, 2 * 18)
    assert len(stealth["ocr"]) == 20 * 3 * 6
    assert len(C.sentiment_conditions()) == 37 and len(C.vqa_conditions()) == 18
    short = stealth["short"][0]
    assert short["image"].size == (800, 600) and short["polarity"] in {"positive", "negative", "neutral"}
    assert stealth["long"][0]["first_half_polarity"] == "positive"
    assert stealth["vqa"][0]["decoy_embedder"] and stealth["vqa"][0]["answers"]


def _inside(mask: np.ndarray, boxes: list[list[int]]) -> np.ndarray:
    allowed = np.zeros_like(mask)
    for x0, y0, x1, y1 in boxes:
        allowed[max(y0, 0) : y1, max(x0, 0) : x1] = True
    return allowed


def test_colored_words_carry_exact_rgb_and_nothing_else_changes(stealth) -> None:
    conds = rows_of(stealth["short"], "short-000")
    base = pixels(conds["baseline"])
    for name in ("positive-red-136", "negative-cyan-85", "positive-yellow-34"):
        row = conds[name]
        rgb = np.array(row["rgb"])
        active = {"red": (1, 0, 0), "cyan": (0, 1, 1), "yellow": (1, 1, 0)}[row["hue"]]
        assert tuple(rgb) == tuple(row["intensity"] * c for c in active)
        img = pixels(row)
        colored = [w["box"] for w in row["word_boxes"] if w["role"] == row["colored_polarity"]]
        assert colored
        for x0, y0, x1, y1 in colored:
            patch = img[y0:y1, x0:x1].reshape(-1, 3)
            assert (patch == rgb).all(axis=1).any(), "fully covered glyph pixels carry the exact color"
            assert (patch >= rgb).all(), "anti-aliasing only blends towards the white background"
        changed = (img != base).any(axis=2)
        assert changed.any() and not (changed & ~_inside(changed, colored)).any()
        assert row["measured_rgb"] == list(rgb)


def test_gray_levels_are_exact_and_saliency_changes_only_its_words(stealth) -> None:
    conds = rows_of(stealth["vqa"], "vqa-000")
    for g in C.GRAY_LEVELS:
        glob = conds[f"global-{g}"]
        assert glob["image"].mode == "L"
        img = np.asarray(glob["image"], dtype=np.int32)
        assert img.min() == g and set(np.unique(img)) <= set(range(g, 256))
        for salient in ("answer", "decoy"):
            row = conds[f"{salient}-{g}"]
            boxes = [w["box"] for w in row["word_boxes"] if w["role"] == salient]
            other = np.asarray(row["image"], dtype=np.int32)
            changed = other != img
            assert boxes and changed.any() and not (changed & ~_inside(changed, boxes)).any()
            assert other.min() == 0  # the salient words are black


def test_delta_e_is_measured_on_the_image(stealth) -> None:
    conds = rows_of(stealth["short"], "short-001")
    assert conds["baseline"]["delta_e"] == pytest.approx(100.0, abs=0.01)  # black on white
    strong = conds["positive-red-136"]
    assert strong["delta_e"] == pytest.approx(delta_e_2000((136, 0, 0)), abs=1e-4)
    vqa = rows_of(stealth["vqa"], "vqa-000")
    assert vqa["global-240"]["delta_e"] < vqa["global-128"]["delta_e"] < vqa["global-1"]["delta_e"]


def test_same_seed_same_images(stealth, stealth_dir: Path, tmp_path: Path) -> None:
    from builders import build_dataset
    from tests.protocols.stealth.fixtures import write_squad

    again = build_dataset(
        "stealth",
        tmp_path / "again",
        squad=str(write_squad(tmp_path / "s.json", n=12)),
        sentences=3,
        questions=2,
        subsets=("short",),
        workers=1,
    )
    first = next((stealth_dir / "data").glob("short-*.parquet")).read_bytes()
    assert next((again / "data").glob("short-*.parquet")).read_bytes() == first
    preview = Image.open(io.BytesIO((stealth_dir / "preview.png").read_bytes()))
    assert preview.size[0] == 1600


def test_card_metadata_validates(stealth_dir: Path) -> None:
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(stealth_dir / "README.md")
    assert card.data.license == "cc-by-sa-4.0"
    assert [c["split"] for c in card.data.configs[0]["data_files"]] == ["short", "long", "vqa", "ocr"]
    assert "| short | 100 short sentences | 37 | 111 |" in card.text


def test_partial_build_card_lists_only_built_splits(tmp_path: Path) -> None:
    """The README's offline route (no SQuAD): the card must not name a vqa split that has no files."""
    from datasets import load_dataset
    from huggingface_hub import DatasetCard

    from builders import build_dataset

    out = build_dataset("stealth", tmp_path / "partial", sentences=1, subsets=("short", "ocr"), workers=1)
    card = DatasetCard.load(out / "README.md")
    assert [c["split"] for c in card.data.configs[0]["data_files"]] == ["short", "ocr"]
    ds = load_dataset(str(out))
    assert set(ds) == {"short", "ocr"} and len(ds["short"]) == 37


def test_context_window_keeps_the_answer_and_word_boundaries() -> None:
    context = " ".join(f"word{i}" for i in range(300))  # 2,190 characters
    start = context.index("word150")
    window = window_context(context, "word150", start)
    assert len(window.text) <= 600
    assert window.text[window.answer_start : window.answer_end] == "word150"
    assert all(tok.startswith("word") and tok[4:].isdigit() for tok in window.text.split())
    assert context.find(window.text) >= 0
    short = window_context("A short passage about Paris.", "Paris", 22)
    assert short.text == "A short passage about Paris." and short.answer_start == 22
    cands = [w for _, w in decoy_candidates(window)]
    assert "word150" not in cands and "word149" in cands


def test_missing_font_squad_and_subset_fail_clearly(tmp_path: Path) -> None:
    from builders import build_dataset

    with pytest.raises(HarnessError, match=re.escape("--font /nope.ttf: no such file")):
        build_dataset("stealth", tmp_path / "x", font="/nope.ttf")
    with pytest.raises(HarnessError, match=r"SQuAD source .* cannot be read.*offline, pass --squad"):
        build_dataset("stealth", tmp_path / "x", squad=str(tmp_path / "missing-org/none"), subsets=("vqa",))
    with pytest.raises(HarnessError, match="unknown stealth subset"):
        build_dataset("stealth", tmp_path / "x", subsets=("medium",))
    with pytest.raises(HarnessError, match="--squad do not apply to the shapes builder"):
        build_dataset("shapes", tmp_path / "x", squad="x")


def test_mask_compositing_equals_pil_text_drawing() -> None:
    """The builder's fast Canvas is pixel-identical to drawing every word with PIL, per condition."""
    import random

    from builders.stealth import render
    from builders.stealth.builder import _font, sentence_specs
    from harness.fonts import resolve_font

    font_path = str(resolve_font())
    spec = sentence_specs("short", random.Random(1), font_path, "sha")[0]
    font = _font(font_path, spec["font_sizes"][0])
    placed = render.layout(spec["words"], font)
    canvas = render.Canvas(placed, font)
    roles = [p.role for p in placed]
    for cond in C.sentiment_conditions()[:8] + C.vqa_conditions()[:2]:
        colors = C.word_colors(roles, cond)
        assert (np.asarray(canvas.draw(colors)) == np.asarray(render.draw(placed, colors, font))).all()
