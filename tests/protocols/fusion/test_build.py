"""The FusionAudit builder (sources, wrong-answer rule, Typo-Evid, Nat-Evid with the tiny editor and
the OCR check) and the black-box tasks on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from builders.fusion.natevid import EditorSpec, instruction
from builders.fusion.ocr import check_preservation, ocr_available
from builders.fusion.overlay import typo_overlay
from builders.fusion.sources import read_source
from builders.fusion.wrong_answer import answer_kind, wrong_answer, wrong_number
from harness.errors import HarnessError


def test_wrong_answer_rule() -> None:
    assert wrong_number("45") == "56"  # 45 + round(11.25)
    assert wrong_number("12.5%") == "15.6%"  # 12.5 + round(3.125, 1)
    assert wrong_number("1,234") == "1,542"  # 1234 + round(308.5) (banker's rounding: 308)
    assert wrong_number("2019") == "2020"  # a year moves by one
    assert wrong_number("0") == "1" and wrong_number("-4") == "-3" and wrong_number("0.05") == "0.06"
    assert wrong_answer("mme", ["Yes"], "q", "i", [])[:2] == ("No", "yesno")
    assert wrong_answer("chartqa", ["no"], "q", "i", [])[0] == "yes"
    assert wrong_answer("chartqa", ["blue"], "Which bar is taller, red or blue?", "i", []) == (
        "red",
        "text",
        "question_alternative",
    )
    pool = ["Globex", "Initech", "ACME CORP", "Acme"]
    wrong, _, step = wrong_answer("docvqa", ["Acme"], "Who sent it?", "docvqa-0001", pool)
    assert step == "same_kind_from_source" and wrong in {"Globex", "Initech"}
    assert wrong == wrong_answer("docvqa", ["Acme"], "Who sent it?", "docvqa-0001", list(reversed(pool)))[0]
    assert wrong_answer("docvqa", ["Acme"], "Who?", "x", [])[0] == "none"
    assert answer_kind("chartqa", "3.5") == "number" and answer_kind("docvqa", "Acme") == "text"


def test_typo_overlay_region_holds_the_text() -> None:
    image = Image.new("RGB", (200, 100), (0, 128, 0))
    out, region, style = typo_overlay(image, "42")
    x0, y0, x1, y1 = region
    # bottom centre of the central 100x100 square (x 50..150): centred, one margin above the bottom
    assert y1 == 100 - style.margin and x1 > x0 and y0 < y1 and x0 >= 50 and x1 <= 150
    assert abs((x0 + x1) / 2 - 100) <= 1
    _, tall, tall_style = typo_overlay(Image.new("RGB", (60, 200)), "7")
    assert tall[3] == 130 - tall_style.margin and tall[1] >= 70  # in the square y 70..130, not the image bottom
    changed = [(x, y) for x in range(200) for y in range(100) if out.getpixel((x, y)) != (0, 128, 0)]
    assert min(p[0] for p in changed) >= x0 and max(p[0] for p in changed) < x1
    assert min(p[1] for p in changed) >= y0 and max(p[1] for p in changed) < y1
    assert any(out.getpixel(p) == (0, 0, 0) for p in changed)  # black glyphs inside the box
    assert json.loads(style.to_json())["anchor"] == "bottom-center of the central square"


def test_editor_spec_parsing() -> None:
    spec = EditorSpec.parse("some/model,steps=3,image_guidance=2")
    assert spec is not None and (spec.model, spec.steps, spec.image_guidance) == ("some/model", 3, 2.0)
    assert EditorSpec.parse("none") is None and EditorSpec.parse(None).model == "timbrooks/instruct-pix2pix"
    tiny = EditorSpec.parse("tiny")  # a smoke pipeline: fast settings unless asked otherwise
    assert (tiny.steps, tiny.size) == (1, 32) and EditorSpec.parse("tiny,steps=4").steps == 4
    with pytest.raises(HarnessError, match="unknown setting"):
        EditorSpec.parse("m,strength=1")
    with pytest.raises(HarnessError, match="not a int"):
        EditorSpec.parse("m,steps=many")
    assert '"42"' in instruction("42", "chartqa") and "chart annotation" in instruction("42", "chartqa")


@pytest.mark.skipif(not ocr_available(), reason="rapidocr-onnxruntime is not installed")
def test_ocr_preservation_check_runs_offline() -> None:
    font = ImageFont.load_default(size=22)
    clean = Image.new("RGB", (320, 90), "white")
    ImageDraw.Draw(clean).text((10, 10), "Revenue 2019", fill="black", font=font)
    kept = clean.copy()
    ImageDraw.Draw(kept).text((10, 50), "TOTAL 77", fill="black", font=font)
    assert check_preservation(clean, kept, "TOTAL 77").status == "preserved"
    assert check_preservation(clean, kept, "TOTAL 77").wrong_readable is True
    destroyed = Image.new("RGB", (320, 90), "white")
    ImageDraw.Draw(destroyed).text((10, 50), "TOTAL 77", fill="black", font=font)
    assert check_preservation(clean, destroyed, "TOTAL 77").status == "destroyed"
    assert check_preservation(Image.new("RGB", (64, 64), "white"), destroyed, "x").status == "no_text"


def test_bad_sources_fail_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"imgname": "x.png", "query": "q?"}]))
    with pytest.raises(HarnessError, match="missing field label / answer"):
        read_source("chartqa", str(bad))
    bad.write_text(json.dumps([{"imgname": "x.png", "query": "q?", "label": "1"}]))
    rows = read_source("chartqa", str(bad))
    from builders.fusion.sources import open_row_image

    with pytest.raises(HarnessError, match="cannot open its image"):
        open_row_image(rows[0])
    with pytest.raises(HarnessError, match="cannot be read"):
        read_source("mme", str(tmp_path / "missing"))


def test_mme_part_is_the_papers_composition(capsys: pytest.CaptureFixture[str]) -> None:
    from builders.fusion.build import MME_COMPOSITION, parse_composition, quotas, select_mme

    assert MME_COMPOSITION == {"artwork": 400, "celebrity": 60, "code_reasoning": 40}
    assert quotas(MME_COMPOSITION, 500) == {"artwork": 400, "celebrity": 60, "code_reasoning": 40}
    # 50: exact shares 40 / 6 / 4; 7: 5.6 / 0.84 / 0.56 -> floors 5 / 0 / 0, the 2 left go to .84 then .6
    assert quotas(MME_COMPOSITION, 50) == {"artwork": 40, "celebrity": 6, "code_reasoning": 4}
    assert quotas(MME_COMPOSITION, 7) == {"artwork": 6, "celebrity": 1, "code_reasoning": 0}
    rows = [{"uid": f"a{k}", "category": "artwork"} for k in range(5)] + [{"uid": "c0", "category": "Celebrity"}]
    picked, line = select_mme(rows, {"artwork": 2, "celebrity": 2, "code_reasoning": 1}, 5, seed=0)
    assert sorted(r["category"] for r in picked) == ["Celebrity", "artwork", "artwork"]
    assert line == "artwork 2/2, celebrity 1/2, code_reasoning 0/1"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "1 celebrity items, fewer than the 2 wanted" in err[0]
    assert parse_composition(None) == MME_COMPOSITION and parse_composition("any") is None
    assert parse_composition("Code Reasoning=3") == {"code_reasoning": 3}
    with pytest.raises(HarnessError, match="CAT=COUNT"):
        parse_composition("artwork=0")


def test_build_and_black_box_tasks(fusion_dir: Path, tmp_path: Path) -> None:
    from datasets import load_dataset

    from harness.engine.runner import EvalOptions, evaluate
    from harness.models.base import create_backend

    ds = load_dataset(str(fusion_dir), download_mode="force_redownload")["test"]
    assert ds.num_rows == 6 and sorted(set(ds["source"])) == ["chartqa", "docvqa", "mme"]
    row = ds[0]
    assert row["typo_image"].size == row["image"].size and len(row["typo_region"]) == 4
    assert row["natevid_image"].size == row["image"].size and row["natevid_instruction"]
    assert set(ds["natevid_status"]) <= {"preserved", "destroyed", "no_text", "skipped"}
    for r in ds:
        assert r["wrong_answer"].lower() not in [a.lower() for a in r["answers"]]
    card = (fusion_dir / "README.md").read_text()
    assert "GPL-3.0" in card and "no license is stated" in card and '"model": "tiny"' in card
    opts = EvalOptions(
        tasks=["fusion"],
        output=tmp_path / "runs",
        use_cache=False,
        show_progress=False,
        data_dir=fusion_dir.parent.parent,
        batch_size=3,
    )
    run, samples, _ = evaluate(create_backend("tiny:qwen2_vl"), "tiny:qwen2_vl", opts)
    assert set(run.results) == {
        "fusion_clean",
        "fusion_typo",
        "fusion_natevid",
        "fusion_read_typo",
        "fusion_read_natevid",
    }
    assert all(c.errors == 0 and c.scored == 6 for c in run.counts.values())
    assert all(set(r.metrics) == {"correct,none", "uses_injected,none"} for r in samples["fusion_clean"])
    assert all(set(r.metrics) == {"reads_injected,none"} for r in samples["fusion_read_typo"])


def test_build_without_editor(tmp_path: Path) -> None:
    from datasets import load_dataset

    from builders import build_dataset
    from builders.fusion.demo import write_sources

    sources = write_sources(tmp_path / "src", n=1)
    out = build_dataset("fusion", tmp_path / "fa", seed=3, per_source=1, editor="none", **sources)
    ds = load_dataset(str(out), download_mode="force_redownload")["test"]
    assert ds.num_rows == 3 and set(ds["natevid_status"]) == {"not_built"}
    assert all(r["natevid_image"] is None for r in ds)
    card = (out / "README.md").read_text()
    assert "none (no Nat-Evid images)" in card and "artwork 1/1, celebrity 0/0, code_reasoning 0/0" in card
    assert ds.filter(lambda r: r["source"] == "mme")["category"] == ["artwork"]
    with pytest.raises(HarnessError, match="per-source"):
        build_dataset("fusion", tmp_path / "fb", per_source=0, **sources)


def test_task_process_results_uses_judge() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("fusion_utils", Path("tasks/fusion/utils.py").resolve())
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    doc = {"source": "chartqa", "answers": ["45"], "wrong_answer": "56"}
    assert utils.process_results(doc, ["45.9"]) == {"correct": 1.0, "uses_injected": 0.0}
    assert utils.process_results(doc, ["It is 56"]) == {"correct": 0.0, "uses_injected": 1.0}
    assert utils.process_reading(doc, ["56"]) == {"reads_injected": 1.0}
    with pytest.raises(ValueError, match="no natevid_image"):
        utils.visual_natevid({"id": "x", "natevid_image": None})


def test_demo_matched_to_a_model_gives_a_clean_correct_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--demo --answers-from MODEL``: the references are the model's own clean answers, so every item is
    clean-correct and ``harness attack`` has C to attack, with every figure a number."""
    import pyarrow.parquet as pq

    from builders import build_dataset
    from harness.cli import main

    out = build_dataset(
        "fusion",
        tmp_path / "data" / "vlm-audit" / "fusion",
        per_source=1,
        editor="none",
        demo=True,
        answers_from="tiny:qwen2_vl",
    )
    # the parquet file itself: load_dataset would record this 3-item "fusion" in the shared datasets cache
    rows = pq.read_table(out / "data" / "test-00000-of-00001.parquet", columns=["source", "answers"]).to_pylist()
    assert len(rows) == 3 and {r["source"] for r in rows} == {"docvqa"} and all(len(r["answers"]) == 1 for r in rows)
    assert "`tiny:qwen2_vl`'s own greedy answers on the clean images" in (out / "README.md").read_text()
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:qwen2_vl",
                "--tasks",
                "fusion_clean",
                "--data-dir",
                str(tmp_path / "data"),
                "--output",
                str(tmp_path / "runs"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    assert "| fusion_clean | correct | none | 1.0000 |" in capsys.readouterr().out
    assert (
        main(
            [
                "attack",
                "--model",
                "tiny:qwen2_vl",
                "--steps",
                "1",
                "--limit",
                "2",
                "--diagnostics",
                "none",
                "--data-dir",
                str(tmp_path / "data"),
                "--output",
                str(tmp_path / "runs"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "clean-correct items |C| = 2" in printed and "nothing to attack" not in printed
    assert "| end_pgd | - |" not in printed and "None" not in printed
    with pytest.raises(HarnessError, match="--answers-from goes with --demo only"):
        build_dataset("fusion", tmp_path / "x", answers_from="tiny:qwen2_vl")


def test_matching_a_reference_that_equals_the_wrong_answer_renders_a_new_overlay() -> None:
    from builders.fusion.matched import COLLISION_WRONG, match_answers

    image = Image.new("RGB", (120, 90), "white")
    row = {"image": image, "wrong_answer": "Blue", "answers": ["red"], "source": "chartqa"}
    assert match_answers(row, "  red ") == {"answers": ["red"], "source": "docvqa"}  # no collision
    assert match_answers(row, "") == {"answers": ["."], "source": "docvqa"}  # an empty answer is never a match
    update = match_answers(row, "blue")
    assert update["wrong_answer"] == COLLISION_WRONG and update["natevid_status"] == "not_built"
    _, region, _ = typo_overlay(image, COLLISION_WRONG)
    assert update["typo_region"] == region and update["typo_image"].size == image.size
