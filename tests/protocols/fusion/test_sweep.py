"""``harness audit fusion --sweep``: the grid, the stability subset, the sweep's figures by hand, the rank
moves of the audit, and the command on a tiny model."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from harness.protocols.fusion.attacks.pgd import PGDConfig
from harness.protocols.fusion.attacks.run import CleanItem
from harness.protocols.fusion.metrics import rank_moves
from harness.protocols.fusion.sweep import (
    SweepConfig,
    check_sweep,
    setting_name,
    stability_subset,
    sweep_figures,
)

E4, E8 = 4 / 255, 8 / 255


def test_paper_grid_by_default() -> None:
    config = SweepConfig()
    assert (config.items, config.seeds, config.steps_grid) == (300, (0, 1, 2), (10, 20, 30, 40, 50))
    assert config.eps_grid == (2 / 255, 4 / 255, 8 / 255) and (config.pgd.steps, config.pgd.eps) == (40, E8)
    # 3 seeds + 4 other step counts + 2 other eps: the shared default setting is run once
    assert len(config.settings()) == 9 and setting_name(0, 40, E8) == "seed0_steps40_eps8"
    with pytest.raises(HarnessError, match="non-empty"):
        check_sweep(SweepConfig(seeds=()))
    with pytest.raises(HarnessError, match="eps > 0"):
        check_sweep(SweepConfig(eps_grid=(0.0,)))


def test_stability_subset_takes_the_first_items_per_source_by_id() -> None:
    def item(i: str, source: str) -> CleanItem:
        return CleanItem(i, {"source": source}, [], None, "")

    items = [item("c3", "mme"), item("a2", "chartqa"), item("a1", "chartqa"), item("a3", "chartqa"), item("c1", "mme")]
    assert [it.item for it in stability_subset(items, 4)] == ["a1", "a2", "c1", "c3"]


def test_sweep_figures_by_hand() -> None:
    config = SweepConfig(
        seeds=(0, 1, 2), steps_grid=(1, 2), eps_grid=(E4, E8), attacks=("end_pgd",), pgd=PGDConfig(steps=2, eps=E8)
    )
    asr = {
        "a": {(0, 2, E8): 0.5, (1, 2, E8): 0.6, (2, 2, E8): 0.7, (0, 1, E8): 0.2, (0, 2, E4): 0.1},
        "b": {(0, 2, E8): 0.8, (1, 2, E8): 0.8, (2, 2, E8): 0.8, (0, 1, E8): 0.4, (0, 2, E4): 0.3},
        "c": {(0, 2, E8): 0.6, (1, 2, E8): 0.9, (2, 2, E8): 0.6, (0, 1, E8): 0.6, (0, 2, E4): 0.5},
    }
    figures = sweep_figures(
        {m: {s: {"end_pgd": v} for s, v in rows.items()} for m, rows in asr.items()},
        {"a": "L1", "b": "L2", "c": "L2"},
        config,
    )
    sds = figures["stability"]["end_pgd"]["sd_per_model"]
    # sample SDs: a 0.1, b 0, c sqrt(((0.6-0.7)^2 * 2 + 0.2^2) / 2) = sqrt(0.03)
    assert sds["a"] == pytest.approx(0.1) and sds["b"] == pytest.approx(0.0)
    assert sds["c"] == pytest.approx(0.03**0.5)
    assert figures["stability"]["end_pgd"]["median_sd"] == pytest.approx(0.1)
    # steps at seed 0, eps 8: L1 = a; L2 = mean(b, c)
    assert figures["steps"]["end_pgd"]["1"] == pytest.approx({"L1": 0.2, "L2": 0.5})
    assert figures["steps"]["end_pgd"]["2"] == pytest.approx({"L1": 0.5, "L2": 0.7})
    assert figures["gain_steps_2_vs_2"]["end_pgd"] == pytest.approx({"L1": 0.0, "L2": 0.0})
    assert figures["eps"]["end_pgd"]["4/255"] == pytest.approx({"L1": 0.1, "L2": 0.4})
    assert figures["level_order_by_eps"]["end_pgd"] == {"4/255": ["L1", "L2"], "8/255": ["L1", "L2"]}
    assert figures["asr"]["a"]["seed1_steps2_eps8"] == {"end_pgd": 0.6}
    assert statistics.median([0.1, 0.0, 0.03**0.5]) == pytest.approx(0.1)


def test_rank_moves_count_models_moving_three_or_more() -> None:
    end = {"m1": 0.9, "m2": 0.8, "m3": 0.7, "m4": 0.6, "m5": None}
    r_plus = {"m1": 0.5, "m2": 0.9, "m3": 0.8, "m4": 0.95, "m5": 0.1}
    # rank 1 = lowest failure rate: End-PGD ranks 4, 3, 2, 1; R+ ranks 1, 3, 2, 4 (m5 has no End-PGD figure)
    moves = rank_moves(end, r_plus)
    assert moves["ranks"] == {"m1": [4.0, 1.0], "m2": [3.0, 3.0], "m3": [2.0, 2.0], "m4": [1.0, 4.0]}
    assert moves["moved"] == ["m1", "m4"] and moves["n_moved"] == 2
    assert rank_moves({}, {})["n_moved"] == 0


def test_ranks_run_as_the_papers_gemma3_12b() -> None:
    """Rank 1 is the most robust model. The paper's Table 1 excerpt (End-PGD and R+, in %) puts Gemma3-12B
    at End-PGD 35.7, the lowest of the eight listed (rank 1 here; 2nd of all 18 in the paper), and at R+
    81.5, above Qwen2.5-VL-7B 79.5, Qwen3-VL-4B 78.9 and Qwen3.5-9B 59.5: rank 4 of the eight. Adding the
    six R+ figures its text gives (Qwen3-VL-2B 82.7, Qwen3-VL-8B 73.1, Qwen3.5-2B 78.0, Qwen3.5-4B 68.1,
    InstructBLIP 99.5, DeepSeek-VL 99.2) puts three more below it: rank 7, the paper's "7th under R+"."""
    table = {
        "SmolVLM2-2.2B": (80.4, 100.0),
        "BLIP2-OPT-2.7B": (43.1, 91.2),
        "Qwen2.5-VL-3B": (66.6, 85.7),
        "Gemma3-12B": (35.7, 81.5),
        "Qwen2.5-VL-7B": (45.4, 79.5),
        "Qwen3-VL-4B": (37.4, 78.9),
        "Gemma4-E4B": (46.7, 88.7),
        "Qwen3.5-9B": (38.3, 59.5),
    }
    moves = rank_moves({m: e for m, (e, _) in table.items()}, {m: r for m, (_, r) in table.items()})
    # End-PGD ascending: Gemma3-12B 1, Qwen3-VL-4B 2, Qwen3.5-9B 3, BLIP2 4, Qwen2.5-VL-7B 5, Gemma4 6,
    # Qwen2.5-VL-3B 7, SmolVLM2 8; R+ ascending: Qwen3.5-9B 1, Qwen3-VL-4B 2, Qwen2.5-VL-7B 3, Gemma3-12B 4,
    # Qwen2.5-VL-3B 5, Gemma4 6, BLIP2 7, SmolVLM2 8
    assert moves["ranks"] == {
        "SmolVLM2-2.2B": [8.0, 8.0],
        "BLIP2-OPT-2.7B": [4.0, 7.0],
        "Qwen2.5-VL-3B": [7.0, 5.0],
        "Gemma3-12B": [1.0, 4.0],
        "Qwen2.5-VL-7B": [5.0, 3.0],
        "Qwen3-VL-4B": [2.0, 2.0],
        "Gemma4-E4B": [6.0, 6.0],
        "Qwen3.5-9B": [3.0, 1.0],
    }
    assert moves["moved"] == ["BLIP2-OPT-2.7B", "Gemma3-12B"]
    r_plus = {m: r for m, (_, r) in table.items()} | {
        "Qwen3-VL-2B": 82.7,
        "Qwen3-VL-8B": 73.1,
        "Qwen3.5-2B": 78.0,
        "Qwen3.5-4B": 68.1,
        "InstructBLIP-Vicuna-7B": 99.5,
        "DeepSeek-VL-7B": 99.2,
    }
    assert rank_moves(r_plus, r_plus)["ranks"]["Gemma3-12B"] == [7.0, 7.0]


def test_sweep_command_on_a_tiny_model(fusion_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.protocols.fusion.fixtures import model_matched_copy

    data = tmp_path / "data"
    model_matched_copy(fusion_dir, "tiny:qwen2_vl", data)
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:qwen2_vl",
                "--tasks",
                "fusion_clean",
                "--limit",
                "2",
                "--data-dir",
                str(data),
                "--output",
                str(tmp_path / "runs"),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    run_dir = next((tmp_path / "runs").glob("*/*"))
    out = tmp_path / "sweep"
    assert (
        main(
            [
                "audit",
                "fusion",
                str(run_dir),
                "--sweep",
                "--sweep-items",
                "2",
                "--sweep-seeds",
                "0,1",
                "--sweep-steps",
                "1",
                "--sweep-eps",
                "8/255",
                "--steps",
                "1",
                "--attacks",
                "end_pgd",
                "--eps",
                "8/255",
                "--data-dir",
                str(data),
                "--output",
                str(out),
                "--verbosity",
                "quiet",
            ]
        )
        == 0
    )
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["config"]["settings"] == ["seed0_steps1_eps8", "seed1_steps1_eps8"]
    assert sweep["levels"] == {"tiny:qwen2_vl": "L2"}
    runs = [json.loads((out / "tiny__qwen2_vl" / s / "attack.json").read_text()) for s in sweep["config"]["settings"]]
    values = [r["asr"]["end_pgd"] for r in runs]
    assert [r["n_clean_correct"] for r in runs] == [2, 2] and [r["seed"] for r in runs] == [0, 1]
    assert sweep["stability"]["end_pgd"]["median_sd"] == pytest.approx(statistics.stdev(values))
    assert sweep["steps"]["end_pgd"]["1"]["L2"] == values[0]
    assert (out / "fusion_sweep_steps.png").is_file() and (out / "fusion_sweep_eps.png").is_file()
    assert "median SD of ASR" in capsys.readouterr().out
    assert main(["audit", "fusion", str(run_dir), "--sweep", "--sweep-steps", "x", "--verbosity", "quiet"]) == 2
