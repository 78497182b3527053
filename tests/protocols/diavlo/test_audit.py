"""harness audit diavlo: occlusion designs, counterfactual outcomes, DML effects with refutations, on a
scripted model with a planted effect and end to end on the tiny model through the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from harness.cli import main
from harness.engine.runner import EvalOptions, evaluate
from harness.engine.store import ResponseStore
from harness.errors import HarnessError
from harness.models.base import Backend
from harness.protocols.diavlo.audit import (
    DiavloAuditConfig,
    ModelAudit,
    _area_share,
    audit_run,
    concept_boxes,
    is_sampled,
    occlude,
    occlusion_designs,
    occlusion_statement,
    write_audit,
)
from harness.protocols.diavlo.audit_report import DiavloAuditReport
from harness.protocols.diavlo.concept_effects import DMLSettings


def test_occlusion_designs_powerset_and_cap() -> None:
    assert occlusion_designs(["a", "b"], 16, 0) == [(), ("a",), ("b",), ("a", "b")]
    capped = occlusion_designs(["a", "b", "c"], 5, 0)
    assert capped[:4] == [(), ("a",), ("b",), ("c",)] and len(capped) == 5 and len(capped[4]) >= 2
    assert occlusion_designs(["a", "b", "c"], 5, 0) == capped  # seeded
    assert len(occlusion_designs(list("abcdefgh"), 16, 1)) == 16


def test_occlusion_default_is_the_full_power_set_up_to_ten_concepts() -> None:
    """The paper occludes every subset of the RK concepts: 2 ** 10 = 1024 designs for 10 concepts is the
    default's limit; 11 concepts (2048 subsets) get 1 + 11 + 1012 sampled designs, all distinct."""
    assert DiavloAuditConfig().max_subsets == 1024
    ten = occlusion_designs([f"c{k}" for k in range(10)], 1024, 0)
    assert len(ten) == len(set(ten)) == 1024 and not is_sampled(10, 1024)
    eleven = occlusion_designs([f"c{k}" for k in range(11)], 1024, 0)
    assert is_sampled(11, 1024) and len(eleven) == len(set(eleven)) == 1024
    assert eleven[:12] == [(), *[(f"c{k}",) for k in range(11)]] and all(len(d) >= 2 for d in eleven[12:])
    assert len(occlusion_designs([f"c{k}" for k in range(40)], 64, 0)) == 64  # 2 ** 40 is never listed
    full = ModelAudit("m", "r", counts={"pairs_with_concepts": 3, "pairs_sampled": 0})
    assert occlusion_statement([full], 1024) == (
        "full power set of the boxed concepts for pairs with at most 10 (up to 1024 designs): every pair"
    )
    some = ModelAudit("m", "r", counts={"pairs_with_concepts": 3, "pairs_sampled": 1})
    assert occlusion_statement([some], 4).endswith("; 1 of 3 pairs had more and got 4 sampled subsets")


def test_occlude_and_area_share_by_hand() -> None:
    image = Image.new("RGB", (10, 10), (0, 0, 0))
    image.paste((200, 100, 50), (0, 0, 5, 10))  # left half coloured: mean (100, 50, 25)
    out = occlude(image, [[5, 0, 9, 9]])
    assert out.getpixel((7, 5)) == (100, 50, 25) and out.getpixel((2, 5)) == (200, 100, 50)
    assert _area_share([[0, 0, 5, 10]], (10, 10)) == pytest.approx(0.5)
    assert _area_share([[0, 0, 5, 10], [0, 0, 10, 5]], (10, 10)) == pytest.approx(0.75)  # union, not sum


def test_concept_boxes_borrow_the_best_matching_sk_box() -> None:
    sk = [
        {
            "subject": "red box",
            "relation": "on",
            "object": "table",
            "subject_box": [1, 2, 3, 4],
            "object_box": [0, 5, 10, 10],
        }
    ]
    boxes = concept_boxes(["red box", "wooden table", "zebra"], sk, Image.new("RGB", (10, 10)), 0.6, None)
    assert boxes["red box"] == [1, 2, 3, 4] and boxes["wooden table"] == [0, 5, 10, 10] and boxes["zebra"] is None


class SeesRed(Backend):
    """A scripted model with a planted effect: it answers "red" exactly when enough red pixels are visible,
    and writes the SK triplets back as its rationale (so RK = SK)."""

    fingerprint = "sees-red-v1"
    model_family = None

    def info(self) -> dict:
        return {"model": "sees-red", "model_family": None}

    def generate(self, requests):
        out = []
        for req in requests:
            if len(req.messages) > 1:
                out.append(["(red box, left of, blue ball)\n(blue ball, on, table)\n(red box, on, table)"] * req.n)
                continue
            image = req.messages[0].images[0]
            px = np.asarray(image.convert("RGB")).astype(int)
            red = ((px[..., 0] > 180) & (px[..., 1] < 80) & (px[..., 2] < 80)).sum()
            out.append(["red" if red > 100 else "brown"] * req.n)
        return out


def test_planted_effect_is_recovered_through_the_audit(tmp_path: Path, diavlo_dir: Path) -> None:
    opts = EvalOptions(
        tasks=["diavlo_vqav2"],
        data_dir=diavlo_dir.parent.parent,
        output=tmp_path / "runs",
        use_cache=False,
        show_progress=False,
    )
    run, _samples, run_dir = evaluate(SeesRed(), "scripted:sees-red", opts)
    assert run.results["diavlo_vqav2"]["performance,none"] == 1.0
    assert run.results["diavlo_vqav2"]["aligned,none"] == 1.0  # two annotated pairs: RK = SK
    config = DiavloAuditConfig(mi_resamples=50, dml=DMLSettings(n_folds=3, n_rep=2, n_estimators=30, min_obs=10))
    audit = audit_run(run_dir, SeesRed(), config, ResponseStore(None), diavlo_dir.parent.parent)
    assert audit.counts["pairs"] == 3 and audit.counts["pairs_with_concepts"] == 3
    flips = {e.concept: e for e in audit.effects["flip"]}
    red = flips["red box"]
    # occluding the red box always flips the answer, nothing else does
    assert red.estimate.effect == pytest.approx(1.0, abs=0.05) and red.estimate.ci[0] > 0.5
    assert abs(red.placebo.effect) < 0.35 and abs(red.random_common_cause.effect - 1.0) < 0.05
    assert all(e.estimate is None or abs(e.estimate.effect) < 0.2 for c, e in flips.items() if c != "red box")
    rows = [r for r in audit.counterfactuals if r["occluded"] == []]
    assert all(r["flip"] == 0.0 and r["distance"] == pytest.approx(0.0, abs=1e-6) for r in rows)
    out = write_audit([audit], config, tmp_path / "audit")
    saved = DiavloAuditReport.read(out)
    model = saved.models["scripted:sees-red"]
    assert model.per_source["diavlo_vqav2"].classes.aligned == 1.0
    shares = model.overall.classes.intervals
    assert shares is not None and shares["Aligned"].unit == "question"
    # every question's pair is Aligned: a bootstrap over them has no spread, and says so instead of [1, 1]
    assert shares["Aligned"].method is None and shares["Aligned"].reason == "every resample of the 3 questions gives 1"
    red_effect = next(e for e in model.effects["flip"] if e.concept == "red box").estimate
    assert red_effect is not None and red_effect.interval is not None and red_effect.interval.method == "dml"
    assert {e.concept for e in model.effects["flip"]} == {"red box", "blue ball", "table"}
    for name in (
        "pairs.csv",
        "counterfactuals.csv",
        "effects.csv",
        "class_shares.png",
        "similarity_performance.png",
        "concept_effects_flip.png",
        "concept_effects_distance.png",
    ):
        assert (out / name).stat().st_size > 0


def test_cli_audit_on_the_tiny_model(tmp_path: Path, diavlo_dir: Path, capsys: pytest.CaptureFixture) -> None:
    data = str(diavlo_dir.parent.parent)
    store = str(tmp_path / "store.sqlite")
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:qwen2_vl",
                "--tasks",
                "diavlo_llava_bench",
                "--limit",
                "2",
                "--gen-kwargs",
                "max_new_tokens=8",
                "--data-dir",
                data,
                "--cache",
                store,
                "--output",
                str(tmp_path / "runs"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    run_dir = next((tmp_path / "runs" / "tiny__qwen2_vl").iterdir())
    capsys.readouterr()
    assert (
        main(
            [
                "audit",
                "diavlo",
                str(run_dir),
                "--concepts",
                "rk_or_sk",
                "--n-rep",
                "2",
                "--mi-resamples",
                "20",
                "--max-subsets",
                "4",
                "--data-dir",
                data,
                "--cache",
                store,
                "--output",
                str(tmp_path / "audit"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| tiny:qwen2_vl | flip |" in printed and "| tiny:qwen2_vl | distance |" in printed
    saved = DiavloAuditReport.read(tmp_path / "audit")
    model = saved.models["tiny:qwen2_vl"]
    assert model.counts.counterfactuals == 8  # 2 pairs x 4 designs (cap)
    # 4 counterfactuals per pair is far below the ~100 the structural test needs: inconclusive, low power
    structure = model.structure
    assert len(structure.pairs) == 2 and structure.verdicts == {"inconclusive": 2}
    assert all("low power" in c.reason for c in structure.pairs)
    assert saved.occlusion.startswith("full power set of the boxed concepts for pairs with at most 2 (up to 4")
    assert model.overall.mutual_information.n == 0 and model.overall.classes.n >= 0
    aligned = (model.overall.classes.intervals or {})["Aligned"]  # no classified pair: no share, no interval
    assert aligned.reason == "the figure is undefined" and aligned.n == 2
    assert all(e.inconclusive for es in model.effects.values() for e in es)  # 8 rows < min_obs
    # a random-weight model's turn 3 holds no triplet: the empty class and MI cells each get a line saying why
    assert (
        "Note: tiny:qwen2_vl: no pair has a class (a class needs REALLY-KNOW triplets from turn 3 and "
        "SHOULD-KNOW ones); 2 of 2 pairs lost their RK (unusable 2), so the class shares are `-`"
    ) in printed
    assert "Note: tiny:qwen2_vl: MI is `-`: fewer than 4 pairs with similarity and performance (0)" in printed
    # with concepts from RK only, nothing is left to occlude: the empty effects table says so
    assert (
        main(
            [
                "audit",
                "diavlo",
                str(run_dir),
                "--concepts",
                "rk",
                "--n-rep",
                "2",
                "--mi-resamples",
                "20",
                "--data-dir",
                data,
                "--cache",
                store,
                "--output",
                str(tmp_path / "audit-rk"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    assert (
        "Note: tiny:qwen2_vl: no concept effect: 0 of 2 pairs have concepts to occlude (from RK, or SK with "
        "--concepts rk_or_sk) and 0 counterfactuals were asked"
    ) in capsys.readouterr().out


def test_audit_errors(tmp_path: Path, data_dir: Path) -> None:
    opts = EvalOptions(
        tasks=["shapes_color"],
        data_dir=data_dir,
        limit=1,
        output=tmp_path / "runs",
        use_cache=False,
        show_progress=False,
    )
    _, _, run_dir = evaluate(SeesRed(), "scripted:sees-red", opts)
    with pytest.raises(HarnessError, match="no diavlo_<source> task"):
        audit_run(run_dir, SeesRed(), DiavloAuditConfig(), ResponseStore(None), data_dir)
    with pytest.raises(HarnessError, match="max-subsets"):
        DiavloAuditConfig(max_subsets=1)
    with pytest.raises(HarnessError, match="--concepts"):
        DiavloAuditConfig(concepts="all")
