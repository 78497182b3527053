"""MIST: builder selection and panels, the 20-arm task end to end, and its report on known answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.engine.runner import EvalOptions, evaluate
from harness.engine.tasks import open_task_code
from harness.errors import HarnessError
from harness.models import create_backend
from harness.results.schema import SampleRecord
from harness.taskspec.registry import TaskRegistry


@pytest.fixture(scope="module")
def mist_set(mist_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    from datasets import load_dataset

    return load_dataset(str(mist_dir), split="test", cache_dir=str(tmp_path_factory.mktemp("hf")))


def test_selection_rule_images_and_panels(mist_set) -> None:
    compounds = [r["compound"] for r in mist_set]
    assert len(compounds) == 6 and "red tape" not in compounds and "white elephant" not in compounds
    assert [r["sense"] for r in mist_set] == ["figurative"] * 3 + ["literal"] * 3
    for row in mist_set:
        assert row["aligned_image"].size == (96, 64) and row["misleading_image"].size == (96, 64)
        own_is_literal = row["sense"] == "literal"
        # literal placeholders are drawn on a blue-ish background: the aligned image matches the sense
        assert (row["aligned_image"].getpixel((1, 1)) == (200, 230, 255)) == own_is_literal
        assert (row["misleading_image"].getpixel((1, 1)) == (200, 230, 255)) != own_is_literal
        panels = {(h["panel"], h["condition"]) for h in row["human_labels"]}
        assert panels == {("blind", "none"), ("informed", "aligned")} and len(row["human_labels"]) == 6
        assert row["human_majority"] in (0, 3)


def test_same_seed_same_items_and_clear_errors(tmp_path: Path) -> None:
    from builders import build_dataset
    from builders.mist.builder import select_items
    from builders.mist.demo import write_admire

    tsv, images, humans = write_admire(tmp_path / "src")
    import csv

    rows = list(csv.DictReader(tsv.open(), delimiter="\t"))
    assert select_items(rows, images, 4, 123) == select_items(rows, images, 4, 123)
    assert select_items(rows, images, 4, 123) != select_items(rows, images, 4, 7)
    with pytest.raises(HarnessError, match="needs --admire"):
        build_dataset("mist", tmp_path / "o", admire=(str(tsv),), images=str(images))
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            [
                {
                    "annotator": "a",
                    "panel": "blind",
                    "condition": "none",
                    "compound": "night owl",
                    "label": "very idiomatic",
                }
            ]
        )
    )
    with pytest.raises(HarnessError, match="row 1: human label 'very idiomatic' is not on the scale"):
        build_dataset("mist", tmp_path / "o", admire=(str(tsv),), images=str(images), humans=str(bad))
    with pytest.raises(HarnessError, match="no compound has both"):
        build_dataset("mist", tmp_path / "o", admire=(str(tsv),), images=str(tmp_path), humans=str(humans))


def test_mist_runs_end_to_end_and_writes_every_figure(mist_dir: Path, tmp_path: Path) -> None:
    opts = EvalOptions(
        tasks=["mist"],
        data_dir=mist_dir.parent.parent,
        limit=10,
        output=tmp_path,
        store_path=tmp_path / "s.sqlite",
        show_progress=False,
        gen_overrides={"max_new_tokens": 8},
    )
    run, samples, run_dir = evaluate(create_backend("tiny:qwen2_vl"), "tiny:qwen2_vl", opts)
    records = samples["mist"]
    assert [(r.doc["technique"], r.doc["arm"]) for r in records[:5]] == [
        ("zero_shot", arm)
        for arm in ("none", "aligned-ignore", "aligned-silent", "misleading-ignore", "misleading-silent")
    ]
    assert records[0].prompt[0]["content"][0]["type"] == "text"  # no image in the no-image arm
    assert records[1].prompt[0]["content"][0]["type"] == "image"
    assert "ignore the image" in records[1].prompt[0]["content"][1]["text"]
    assert "ignore" not in records[2].prompt[0]["content"][1]["text"].lower()
    assert "Examples:" in records[5].prompt[0]["content"][-1]["text"]  # few-shot
    for key in (
        "change_rate_aligned",
        "change_rate_misleading",
        "control_rate_aligned",
        "direction",
        "same_side_fraction",
        "image_following_misleading",
        "agreement_none",
        "agreement_misleading",
    ):
        assert f"{key},none" in run.results["mist"]
    counts = run.counts["mist"]
    assert counts.samples == 10 and counts.unparsed["direction,none"] == sum(1 for r in records if r.unparsed)
    report = run.reports["mist"]
    assert set(report["human_agreement"]) == {"blind", "informed"} and "figures" in report
    assert json.loads((run_dir / "results.json").read_text())["reports"]["mist"]["alt_test"] is not None


def test_report_pins_change_rates_on_known_answers(tmp_path: Path) -> None:
    scorer = open_task_code(TaskRegistry.discover().get("mist"), None).scorer
    answers = {
        "none": "Fully Figurative",
        "aligned-ignore": "FF",
        "aligned-silent": "Weak Figurative",
        "misleading-ignore": "Answer: Fully Literal",
        "misleading-silent": "no idea",
    }
    humans = [{"annotator": f"b{k}", "panel": "blind", "condition": "none", "label": 0} for k in range(3)]
    records = []
    for k, (arm, text) in enumerate(answers.items()):
        doc = {
            "item_id": "m0",
            "technique": "zero_shot",
            "arm": arm,
            "sense": "figurative",
            "human_majority": 0,
            "human_labels": humans,
        }
        records.append(scorer.score(SampleRecord(task="mist", doc_id=k, doc_hash="h", doc=doc, responses=[text]), doc))
    results, counts = scorer.aggregate(records)
    assert results["change_rate_aligned,none"] == 0.5  # FF -> FF (same), FF -> WF (changed)
    assert results["change_rate_misleading,none"] == 1.0  # FF -> FL; the silent arm is unparsed
    assert results["direction,none"] == 1.0 and results["same_side_fraction,none"] == 0.0
    assert results["agreement_none,none"] == 1.0 and counts.unparsed["direction,none"] == 1
    report = scorer.report(records, tmp_path)
    assert report["figures"]["change_rate_aligned"]["value"] == 0.5
    # ignore arm: FF vs FL, one cell, moved toward the literal sense across the divide
    assert report["direction_cells"] == {"arm": "ignore", "cells": 1, "disagreeing": 1, "toward": 1, "same_side": 0}
    assert report["human_agreement"]["blind"]["annotators"] == 3
    assert report["alt_test"]["blind"]["zero_shot"]["skipped_annotators"] == ["b0", "b1", "b2"]  # < 30 items
    assert report["alt_test"]["blind"]["zero_shot"]["epsilon"] == 0.15  # the paper's slack for the blind tier
    assert report["alt_test"]["blind"]["zero_shot"]["arm"] == "ignore"
    stats = report["panel_statistics"]
    assert stats["kappa_difference_informed_minus_blind"] is None  # one panel only
    # the three blind annotators agree on m0 (P_i = 1), but saw it with no image: neither group
    assert stats["condition_contrast"]["blind"]["welch"] == {
        "mean_a": None,
        "mean_b": None,
        "n_a": 0,
        "n_b": 0,
        "t": None,
        "df": None,
        "p_value": None,
    }
    assert (tmp_path / report["plot"]).is_file()


def test_a_judge_plot_that_cannot_be_drawn_is_one_line_saying_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    scorer = open_task_code(TaskRegistry.discover().get("mist"), None).scorer
    doc = {
        "item_id": "m0",
        "technique": "zero_shot",
        "arm": "none",
        "sense": "figurative",
        "human_majority": 0,
        "human_labels": [],
    }
    record = scorer.score(SampleRecord(task="mist", doc_id=0, doc_hash="h", doc=doc, responses=["no idea"]), doc)
    with caplog.at_level("WARNING"):
        report = scorer.report([record], tmp_path)
    assert report["plot"] is None and not (tmp_path / "mist_judge.png").exists()
    (line,) = [r.getMessage() for r in caplog.records if "not drawn" in r.getMessage()]
    assert line.startswith(
        "mist_judge.png not drawn: none of the model's answers could be read as a literal or idiomatic label"
    )


def test_the_demo_human_panels_give_figures_whatever_the_model_answers(mist_dir: Path, tmp_path: Path) -> None:
    """The non-empty part of the MIST demo: its panels' agreement comes from the human labels, so it is filled
    even when every answer of a random-weight model is unparsed. The demo's blind panel labels each of its 6
    items 2-to-1 (FF/FL alternating by item, annotator 2 the odd one out): P_i = (2^2 + 1^2 - 3) / (3 x 2) = 1/3
    for every item, both labels 9 of 18 (P_e = 1/2), so Fleiss' kappa = (1/3 - 1/2) / (1 - 1/2) = -1/3."""
    from harness.engine.task_prompts import strip_images
    from harness.engine.tasks import open_task

    opened = open_task(TaskRegistry.discover().get("mist"), None, mist_dir.parent.parent)
    scorer, records = opened.scorer, []
    for k, doc in enumerate(opened.docs):
        record = SampleRecord(task="mist", doc_id=k, doc_hash=str(k), doc=strip_images(doc), responses=["zq xv"])
        records.append(scorer.score(record, doc))
    assert len(records) == 6 * 20  # 6 items x 4 techniques x 5 arms
    assert all(r.unparsed for r in records)
    report = scorer.report(records, None)
    blind = report["human_agreement"]["blind"]
    assert (blind["annotators"], blind["items"], blind["items_complete"]) == (3, 6, 6)
    assert blind["fleiss_kappa"] == pytest.approx(-1 / 3)
    assert report["human_agreement"]["informed"]["fleiss_kappa"] is not None
    assert report["panel_statistics"]["kappa_difference_informed_minus_blind"]["items"] == 6


def test_report_intervals_resample_items_by_hand(tmp_path: Path) -> None:
    """Four items; only m0's label moves when the aligned image is shown (in both instruction arms), so the
    aligned change rate is 2/8. A resample of items changes k/4 of its cells, k ~ Binomial(4, 1/4):
    P(k = 0) = 81/256 and P(k >= 3) = 13/256 give [0, 3/4]. Agreement with the human majority without an
    image is 1 on every item: every resample gives 1."""
    scorer = open_task_code(TaskRegistry.discover().get("mist"), None).scorer
    records = []
    for item in ("m0", "m1", "m2", "m3"):
        moved = "Fully Literal" if item == "m0" else "Fully Figurative"
        for arm, text in (("none", "Fully Figurative"), ("aligned-ignore", moved), ("aligned-silent", moved)):
            doc = {"item_id": item, "technique": "zero_shot", "arm": arm, "sense": "figurative", "human_majority": 0}
            record = SampleRecord(task="mist", doc_id=len(records), doc_hash="h", doc=doc, responses=[text])
            records.append(scorer.score(record, doc))
    figures = scorer.report(records, None)["figures"]
    change = figures["change_rate_aligned"]
    assert change["value"] == 0.25
    assert (change["interval"]["low"], change["interval"]["high"]) == (0.0, 0.75)
    assert (change["interval"]["method"], change["interval"]["unit"], change["interval"]["n"]) == (
        "cluster_bootstrap",
        "item",
        4,
    )
    agreement = figures["agreement_none"]["interval"]
    assert agreement["low"] is None and agreement["reason"] == (  # every item agrees: no zero-width interval
        "every resample of the 4 items gives 1"
    )
    assert figures["change_rate_misleading"]["interval"]["reason"] == "the figure is undefined"  # no such arm
