"""Stealth tasks end to end on a tiny model, and their reports on answers with known values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.engine.rescore import score_run
from harness.engine.runner import EvalOptions, evaluate
from harness.engine.tasks import open_task_code
from harness.models import create_backend
from harness.results.schema import SampleRecord
from harness.taskspec.registry import TaskRegistry


def test_stealth_runs_end_to_end_with_results_samples_and_reports(stealth_dir: Path, tmp_path: Path) -> None:
    opts = EvalOptions(
        tasks=["stealth", "stealth_ocr"],
        data_dir=stealth_dir.parent.parent,
        limit=20,
        output=tmp_path,
        store_path=tmp_path / "store.sqlite",
        show_progress=False,
    )
    run, samples, run_dir = evaluate(create_backend("tiny:qwen2_vl"), "tiny:qwen2_vl", opts)
    assert set(run.results) == {"stealth_short", "stealth_long", "stealth_vqa", "stealth_ocr"}
    assert run.group_subtasks["stealth"] == ["stealth_short", "stealth_long", "stealth_vqa"]
    short = run.counts["stealth_short"]
    assert short.samples == 20 and short.errors == 0
    # A random-weight model never says POSITIVE/NEUTRAL/NEGATIVE: every answer is counted unparsed.
    unparsed = sum(1 for r in samples["stealth_short"] if r.unparsed)
    assert short.unparsed.get("total_range,none", 0) == unparsed
    assert isinstance(run.results["stealth_vqa"]["f1,none"], float)
    vqa_decoy_docs = [r for r in samples["stealth_vqa"] if r.doc["salient"] == "decoy"]
    assert all("ier,none" in r.metrics for r in vqa_decoy_docs)
    assert all("ier,none" not in r.metrics for r in samples["stealth_vqa"] if r.doc["salient"] != "decoy")
    assert set(run.reports) == {"stealth_short", "stealth_long", "stealth_vqa", "stealth_ocr"}
    assert (run_dir / "stealth_vqa_f1_ier.png").is_file() and (run_dir / "stealth_ocr_readability.png").is_file()
    rescored, _ = score_run(run_dir)
    assert rescored.results == run.results
    assert json.loads((run_dir / "results.json").read_text())["reports"]["stealth_vqa"]["f1_by_condition"]


def _records(task: str, answers: dict[tuple[str, str], str], first: dict[str, str] | None = None) -> list:
    scorer = open_task_code(TaskRegistry.discover().get(task), None).scorer
    records = []
    for k, ((sample, condition), response) in enumerate(answers.items()):
        doc = {"sample_id": sample, "condition": condition, "first_half_polarity": (first or {}).get(sample)}
        record = SampleRecord(task=task, doc_id=k, doc_hash=str(k), doc=doc, responses=[response])
        records.append(scorer.score(record, doc))
    return records, scorer


def test_short_report_pins_bias_figures_and_draws_the_heatmap(tmp_path: Path) -> None:
    # s1: baseline NEGATIVE(-1), positive-red-136 POSITIVE(+1) -> +2 ; negative-blue-34 NEGATIVE -> 0
    # s2: baseline NEUTRAL(0), positive-red-136 NEUTRAL -> 0 ; negative-blue-34 NEGATIVE(-1) -> -1
    # s3: baseline gibberish (unparsed) -> s3 drops out of every pair
    answers = {
        ("s1", "baseline"): "NEGATIVE",
        ("s1", "positive-red-136"): "The answer is positive",
        ("s1", "negative-blue-34"): "negative",
        ("s2", "baseline"): "Neutral.",
        ("s2", "positive-red-136"): "NEUTRAL",
        ("s2", "negative-blue-34"): "NEGATIVE",
        ("s3", "baseline"): "blah",
        ("s3", "positive-red-136"): "POSITIVE",
    }
    records, scorer = _records("stealth_short", answers)
    results, counts = scorer.aggregate(records)
    assert results["max_positive_bias,none"] == pytest.approx(1.0)  # (2 + 0) / 2
    assert results["max_negative_bias,none"] == pytest.approx(-0.5)  # (0 - 1) / 2
    assert results["total_range,none"] == pytest.approx(1.5)
    assert counts.unparsed == {"total_range,none": 1, "max_positive_bias,none": 1, "max_negative_bias,none": 1}
    report = scorer.report(records, tmp_path)
    assert report["by_condition"]["positive-red-136"]["value"] == pytest.approx(1.0)
    by_condition = report["by_condition"]["positive-red-136"]["interval"]
    assert by_condition["low"] <= 1.0 <= by_condition["high"]
    assert report["max_positive_bias"]["condition"] == "positive-red-136"
    assert (tmp_path / report["plot"]).is_file()
    # Total Range by hand: a resample holding s1 a times and s2 b times (s3, without a baseline, takes part
    # in no bias) has B_red = 2a / (a + b), B_blue = -b / (a + b), so Total Range = 1 + a / (a + b). It is 1
    # when s1 is missing and s2 is not (7/26 of the defined resamples), 2 in the reverse case (7/26 too):
    # the 2.5% and 97.5% points are 1 and 2.
    total = report["total_range"]["interval"]
    assert (total["low"], total["high"]) == (1.0, 2.0)
    assert (total["method"], total["unit"], total["n"]) == ("cluster_bootstrap", "sentence", 3)


def test_long_report_strategy_and_adherence() -> None:
    first = {"a": "positive", "b": "negative"}
    answers = {
        ("a", "baseline"): "POSITIVE",
        ("b", "baseline"): "NEGATIVE",
        ("a", "negative-red-85"): "NEGATIVE",
        ("b", "negative-red-85"): "NEGATIVE",
    }
    records, scorer = _records("stealth_long", answers, first)
    results, _ = scorer.aggregate(records)
    # baseline: both follow the first half -> primacy 1.0, recency 0.0; adherence: 3 of 4 answers
    assert results["primacy_rate,none"] == 1.0 and results["recency_rate,none"] == 0.0
    assert results["adherence,none"] == pytest.approx(0.75)
    assert results["color_bias_range,none"] == 0.0  # one colored condition: max = min
    assert scorer.report(records, None)["strategy"] == "primacy"


def test_vqa_f1_and_ier_hand_computed() -> None:
    scorer = open_task_code(TaskRegistry.discover().get("stealth_vqa"), None).scorer
    docs = [
        {
            "sample_id": "q1",
            "condition": "decoy-64",
            "salient": "decoy",
            "decoy": "Glenbrook",
            "gray_level": 64,
            "answers": ["Dunmore"],
        },
        {
            "sample_id": "q2",
            "condition": "decoy-64",
            "salient": "decoy",
            "decoy": "river",
            "gray_level": 64,
            "answers": ["the old mill"],
        },
        {
            "sample_id": "q1",
            "condition": "global-64",
            "salient": None,
            "decoy": "Glenbrook",
            "gray_level": 64,
            "answers": ["Dunmore"],
        },
    ]
    responses = ["Glenbrook", "old mill by the river", "Dunmore"]
    records = [
        scorer.score(SampleRecord(task="stealth_vqa", doc_id=k, doc_hash="h", doc=d, responses=[r]), d)
        for k, (d, r) in enumerate(zip(docs, responses, strict=True))
    ]
    results, _ = scorer.aggregate(records)
    # F1: 0; "old mill by river" vs "old mill" -> P 2/4 R 2/2 -> 2/3; 1.0  -> mean 5/9
    assert results["f1,none"] == pytest.approx((0 + 2 / 3 + 1) / 3)
    assert results["ier,none"] == 1.0  # both decoy-salient answers contain their decoy
    assert "ier,none" not in records[2].metrics


def test_ier_interval_resamples_questions_by_hand() -> None:
    """Four questions answered at two gray levels, one copying the decoy at both: IER = 2/8. A resample of
    questions copies in k/4 of its answers, k ~ Binomial(4, 1/4): P(k = 0) = 81/256 and P(k >= 3) = 13/256
    give the interval [0, 3/4], over 4 questions; no answer, no interval."""
    from harness.protocols.stealth.report import induced_error_rate

    items = [{"sample_id": q, "hit": q == "q1", "gray_level": g} for q in ("q1", "q2", "q3", "q4") for g in (64, 128)]
    figure = induced_error_rate(items)
    assert figure["value"] == 0.25 and figure["n"] == 8
    interval = figure["interval"]
    assert (interval["low"], interval["high"], interval["unit"], interval["n"]) == (0.0, 0.75, "question", 4)
    assert induced_error_rate([])["interval"]["reason"] == "no Decoy Salient answer"


def test_a_heatmap_that_cannot_be_drawn_is_one_line_saying_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # every answer unparsed: no condition has a bias, so stealth_short_bias.png cannot be drawn
    records, scorer = _records("stealth_short", {("s1", "baseline"): "blah", ("s1", "positive-red-136"): "zzz"})
    with caplog.at_level("WARNING"):
        report = scorer.report(records, tmp_path)
    assert report["plot"] is None and "none of the model's answers gave a sentiment score" in report["plot_not_drawn"]
    (line,) = [r.getMessage() for r in caplog.records if "not drawn" in r.getMessage()]
    assert line.startswith("stealth_short_bias.png not drawn: none of the model's answers gave a sentiment score")
    assert not (tmp_path / "stealth_short_bias.png").exists()
    # without an output folder nothing was promised, so nothing is said
    caplog.clear()
    assert "plot_not_drawn" not in scorer.report(records, None) and not caplog.records
