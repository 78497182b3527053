"""The diavlo_<source> tasks: three turns on the tiny model, per-pair scoring, answer scoring, report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.engine.runner import EvalOptions, evaluate
from harness.errors import HarnessError
from harness.metrics.answer_scoring import choice_letter, vqa_accuracy
from harness.models import create_backend
from harness.protocols.diavlo import report as diavlo_report
from harness.protocols.diavlo.report import behaviour_summary, pair_rows, performance, scale_statement, score_pair
from harness.results.schema import SampleRecord

SK = [
    {"subject": "red box", "relation": "left of", "object": "blue ball"},
    {"subject": "blue ball", "relation": "on", "object": "table"},
]


def _turns(text: str, error: str | None = None) -> list[dict]:
    return [
        {"prompt": "why?", "request_keys": ["a"], "responses": ["because"], "error": None},
        {"prompt": "triplets", "request_keys": ["b"], "responses": [] if error else [text], "error": error},
    ]


def test_choice_letter_and_vqa_accuracy_by_hand() -> None:
    options = ["red", "blue", "green", "yellow"]
    assert choice_letter("B", options) == "B" and choice_letter("(C) green", options) == "C"
    assert choice_letter("Answer: D.", options) == "D" and choice_letter("It is blue.", options) == "B"
    assert choice_letter("red or blue", options) is None and choice_letter("purple", options) is None
    answers = ["red"] * 8 + ["orange", "dark red"]
    assert vqa_accuracy("Red.", answers) == 1.0
    # "orange": 9 leave-one-out subsets keep its 1 match (1/3), the one dropping it has 0 -> 9/30
    assert vqa_accuracy("orange", answers) == pytest.approx(0.3)
    assert vqa_accuracy("blue", answers) == 0.0


class _Planar:
    """Unit vectors on fixed angles: cos(cat, dog) = 0.6, cos(cat, car) = 0, cos(dog, car) = 0.8."""

    def vector(self, text: str) -> np.ndarray:
        return {"cat": np.array([1.0, 0.0]), "dog": np.array([0.6, 0.8]), "car": np.array([0.0, 1.0])}[text]


def test_performance_scales_per_source_as_in_the_paper(monkeypatch: pytest.MonkeyPatch) -> None:
    """LLaVA-Bench and MMBench continuous, SEED-Bench-2 and VQA v2 binary (the paper's MI bound ln 2)."""
    monkeypatch.setattr(diavlo_report, "shared_encoder", _Planar)
    mc = {"answer_type": "multiple_choice", "options": ["cat", "dog", "car"], "answer": "A"}
    mmbench, seed = {**mc, "source": "mmbench"}, {**mc, "source": "seed_bench2"}
    # MMBench: gold "cat"; choosing "dog" scores cos = 0.6, "car" cos 0 -> 0, the gold one 1
    assert [performance(mmbench, a) for a in ("A", "B", "C", "maybe")] == [1.0, 0.6, 0.0, None]
    assert [performance(seed, a) for a in ("A", "B", "C")] == [1.0, 0.0, 0.0]
    assert performance(mmbench, "B", "binary") == 0.0 and performance(seed, "B", "continuous") == 0.6
    # VQA v2: consensus "2"; "3" was given by 3 of the 10 humans: soft accuracy (7 * 1 + 3 * 2/3) / 10 = 0.9
    vqa = {"answer_type": "vqa", "source": "vqav2", "answer": "2", "answers": ["2"] * 7 + ["3"] * 3}
    assert performance(vqa, "2") == 1.0 and performance(vqa, "3") == 0.0
    assert performance(vqa, "3", "continuous") == pytest.approx(0.9)
    # LLaVA-Bench: token F1 of "red bus" vs "the red car" (article dropped): P = R = 1/2 -> 0.5; binary: >= 0.5
    llava = {"answer_type": "open", "source": "llava_bench", "answer": "the red car"}
    assert performance(llava, "red bus") == pytest.approx(0.5) and performance(llava, "red bus", "binary") == 1.0
    with pytest.raises(HarnessError, match="choose binary or continuous"):
        performance(llava, "x", "ordinal")
    rows = [{"source": "vqav2", "scale": "binary"}, {"source": "seed_bench2", "scale": "binary"}]
    assert scale_statement(rows) == {
        "scale": "binary",
        "by_source": {"vqav2": "binary", "seed_bench2": "binary"},
        "mi_upper_bound_nats": pytest.approx(0.6931, abs=1e-4),
    }
    mixed = scale_statement([*rows, {"source": "mmbench", "scale": "continuous"}])
    assert mixed["scale"] == "mixed" and mixed["mi_upper_bound_nats"] is None


def test_score_pair_classes_and_losses() -> None:
    doc = {"answer_type": "multiple_choice", "options": ["red", "blue"], "answer": "B", "sk_triplets": SK}
    same = score_pair(doc, "B", _turns("(red box, left of, blue ball)\n(blue ball, on, table)"))
    assert same["performance"] == 1.0 and same["similarity"] == pytest.approx(1.0, abs=1e-5)
    assert same["aligned"] == 1.0 and same["n_rk"] == 2.0 and same["rk_parsed"] == 1.0
    more = score_pair(doc, "A", _turns("(red box, left of, blue ball)\n(blue ball, on, table)\n(sky, above, table)"))
    assert more["performance"] == 0.0 and more["expanded"] == 1.0  # 2 exact matches: similarity 1.0
    unusable = score_pair(doc, "B", _turns("no triplets here"))
    assert unusable["rk_unusable"] == 1.0 and "similarity" not in unusable and "aligned" not in unusable
    failed = score_pair(doc, "B", _turns("", error="generation failed: boom"))
    assert failed["rk_turn_error"] == 1.0
    lmms = score_pair(doc, "B", None)  # a runner without follow-up turns
    assert lmms["rk_parsed"] == 0.0 and lmms["performance"] == 1.0
    assert score_pair(doc, "maybe", None)["performance"] is None
    records = [
        SampleRecord(
            task="diavlo_mmbench",
            doc_id=i,
            doc_hash="h",
            doc={"id": f"p{i}"},
            metrics={f"{k},none": v for k, v in m.items()},
            turns=t,
        )
        for i, (m, t) in enumerate(
            [
                (same, _turns("(red box, left of, blue ball)\n(blue ball, on, table)")),
                (unusable, _turns("no triplets here")),
                (lmms, []),
            ]
        )
    ]
    rows = pair_rows(records)
    assert [r["class"] for r in rows] == ["Aligned", None, None]
    assert rows[0]["source"] == "mmbench" and rows[0]["scale"] == "continuous"
    summary = behaviour_summary(rows, n_resamples=10)
    assert summary["classes"]["Aligned"] == 1.0 and summary["classes"]["unclassified"] == 2
    assert summary["rk_losses"] == {
        "empty": 0,
        "unusable": 1,
        "turn_error": 0,
        "no_turns": 1,
        "total": 2,
        "rate": pytest.approx(2 / 3),
    }
    assert summary["mutual_information"]["mi_nats"] is None  # fewer than 4 pairs


def test_eval_runs_three_turns_on_the_tiny_model(tmp_path: Path, diavlo_dir: Path) -> None:
    opts = EvalOptions(
        tasks=["diavlo_llava_bench", "diavlo_vqav2"],
        data_dir=diavlo_dir.parent.parent,
        limit=2,
        output=tmp_path / "runs",
        store_path=tmp_path / "store.sqlite",
        show_progress=False,
        gen_overrides={"max_new_tokens": 12},
    )
    run, samples, run_dir = evaluate(create_backend("tiny:qwen2_vl"), "tiny:qwen2_vl", opts)
    for task in ("diavlo_llava_bench", "diavlo_vqav2"):
        for record in samples[task]:
            assert record.error is None and len(record.turns) == 2
            assert record.turns[0].prompt.startswith("Explain the rationale")
            assert "triplets" in record.turns[1].prompt and record.turns[1].responses
            assert record.metrics["n_sk,none"] >= 0 and "performance,none" in record.metrics
        report = run.reports[task]
        assert report["pairs"] == 2 and set(report["classes"]) >= {"Aligned", "Expanded", "Divergent", "Unnamed"}
        # the plot is drawn, or (no classified pair: a random-weight model's turns) the report says why not
        assert all((run_dir / plot).is_file() for plot in report["plots"])
        assert report["plots"] or "_classes.png" in report["plot_not_drawn"]
    assert run.provenance.requests.follow_up_requests == 8
    vqa = samples["diavlo_vqav2"][0]
    assert "single word" in vqa.prompt[0]["content"][1]["text"]
