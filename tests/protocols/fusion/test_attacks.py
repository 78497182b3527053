"""FusionAudit white-box attacks: the differentiable preprocessing against the real processor, one PGD
step by hand, first-divergence selection, and ``harness attack`` on tiny Qwen2-VL and LLaVA."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from harness.cli import main
from harness.errors import HarnessError
from harness.models.base import create_backend
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.losses import first_divergence
from harness.protocols.fusion.attacks.pgd import PGDConfig, pgd, pgd_step
from harness.protocols.fusion.attacks.pixels import QuantisedResize, image_to_tensor
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess
from harness.protocols.fusion.judge import judge


@pytest.mark.parametrize("arch", ["qwen2_vl", "qwen3_vl", "qwen3_5", "llava", "gemma3"])
def test_differentiable_preprocessing_equals_the_processor(arch: str) -> None:
    backend = create_backend(f"tiny:{arch}")
    pre = differentiable_preprocess(backend.processor, backend.model_type)
    rng = np.random.default_rng(0)
    for width, height in [(100, 70), (56, 56), (28, 28), (161, 113)]:
        image = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
        real = backend.processor.image_processor(images=[image], return_tensors="pt")
        x = image_to_tensor(image).requires_grad_(True)
        mine = pre([x])
        assert torch.equal(mine["pixel_values"], real["pixel_values"])
        if "image_grid_thw" in real:
            assert torch.equal(mine["image_grid_thw"], real["image_grid_thw"])
        mine["pixel_values"].square().sum().backward()
        assert x.grad is not None and x.grad.abs().sum() > 0
        # the straight-through gradient is autograd's gradient through the processor's float resize
        images = x.detach()[None].requires_grad_(True)
        weights = torch.randn(pre._resize(images.detach() * 255).shape, generator=torch.Generator().manual_seed(1))
        (expected,) = torch.autograd.grad((pre._resize(images * 255) * weights).sum(), images)
        (got,) = torch.autograd.grad((QuantisedResize.apply(images, pre._resize, pre.adjoint) * weights).sum(), images)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    # a batch of mixed sizes keeps its order (same-sized images are processed as one stack)
    batch = [
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in [(100, 70), (56, 56), (100, 70)]
    ]
    real = backend.processor.image_processor(images=batch, return_tensors="pt")
    assert torch.equal(pre([image_to_tensor(im) for im in batch])["pixel_values"], real["pixel_values"])
    # token footprints tile the (cropped) image: Qwen2-VL 56x56 -> 2x2 merged tokens of 28x28
    if arch == "qwen2_vl":
        boxes = pre.geometry(56, 56).boxes
        assert boxes.tolist() == [[0, 0, 28, 28], [28, 0, 56, 28], [0, 28, 28, 56], [28, 28, 56, 56]]
        coverage, areas = pre.geometry(56, 56).coverage((0, 0, 14, 28))
        assert coverage.tolist() == [0.5, 0, 0, 0] and areas.tolist() == [784] * 4
    # Qwen3-VL and Qwen3.5: 16-pixel patches merged 2 x 2 -> 32 x 32 tokens; 64 x 64 -> 2 x 2 of them
    if arch in ("qwen3_vl", "qwen3_5"):
        assert pre.geometry(64, 64).boxes.tolist() == [
            [0, 0, 32, 32],
            [32, 0, 64, 32],
            [0, 32, 32, 64],
            [32, 32, 64, 64],
        ]
    # Gemma 3 squashes any image to 28 x 28 and pools it to 2 x 2 tokens: each covers a quarter
    if arch == "gemma3":
        assert pre.geometry(56, 28).boxes.tolist() == [
            [0, 0, 28, 14],
            [28, 0, 56, 14],
            [0, 14, 28, 28],
            [28, 14, 56, 28],
        ]


def test_pgd_step_by_hand() -> None:
    x0 = torch.tensor([0.50, 0.10, 0.98, 0.40, 0.20])
    x = torch.tensor([0.52, 0.10, 0.98, 0.40, 0.21])
    grad = torch.tensor([1.0, -2.0, 0.5, 0.0, -1e-9])
    # eps 0.03, alpha 0.02: 0.52+0.02=0.54 -> ball top 0.53; 0.10-0.02=0.08; 0.98+0.02=1.0 (ball top 1.01,
    # then [0,1]); sign(0)=0 keeps 0.40; 0.21-0.02=0.19 (inside the ball [0.17, 0.23])
    out = pgd_step(x, grad, x0, eps=0.03, alpha=0.02)
    assert torch.allclose(out, torch.tensor([0.53, 0.08, 1.0, 0.40, 0.19]), atol=1e-7)


def test_pgd_runs_standard_iterations() -> None:
    x0 = [torch.tensor([[[0.0, 0.5, 0.999]]]).expand(3, 1, 3).clone()]
    gen = torch.Generator().manual_seed(0)
    cfg = PGDConfig(eps=0.1, alpha=0.03, steps=5)
    adv, first, last = pgd(x0, lambda xs: torch.stack([x.sum() for x in xs]), cfg, gen)
    # maximising sum(x): every pixel ends at min(x0 + eps, 1) after enough steps
    assert torch.allclose(adv[0][0, 0], torch.tensor([0.1, 0.6, 1.0]), atol=1e-6)
    assert last[0] > first[0]
    # random start stays in the ball and in [0, 1]; zero steps return the start
    start, _, _ = pgd(
        x0, lambda xs: torch.stack([x.sum() for x in xs]), PGDConfig(eps=0.1, steps=0), torch.Generator().manual_seed(1)
    )
    assert (start[0] - x0[0]).abs().max() <= 0.1 + 1e-7 and start[0].min() >= 0 and start[0].max() <= 1
    # the downscaled-noise fallback keeps the full-resolution perturbation inside the ball
    big = [torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(2))]
    low, _, _ = pgd(
        big,
        lambda xs: torch.stack([x.sum() for x in xs]),
        PGDConfig(eps=0.05, alpha=0.02, steps=3, noise_scale=0.5),
        torch.Generator().manual_seed(3),
    )
    assert (low[0] - big[0]).abs().max() <= 0.05 + 1e-6


def test_first_divergence_token() -> None:
    assert first_divergence([1, 2, 3, 9], [1, 2, 4, 9]) == 2
    assert first_divergence([7, 9], [8, 9]) == 0
    assert first_divergence([5, 9], [5, 6, 9]) == 1  # correct ends (9) where the wrong one goes on (6)
    with pytest.raises(HarnessError, match="identical"):
        first_divergence([1, 9], [1, 9])


@pytest.mark.parametrize("arch", ["qwen2_vl", "llava", "gemma3"])
def test_harness_attack_on_tiny_models(arch: str, fusion_dir: Path, tmp_path: Path) -> None:
    attack_end_to_end(arch, fusion_dir, tmp_path)


def attack_end_to_end(arch: str, fusion_dir: Path, tmp_path: Path, limit: int = 3) -> None:
    """``harness attack`` on ``limit`` clean-correct items of tiny ``arch`` through the hf loading path: every
    attack's outcomes and ASR, OAR on the typo and the matched clean image, restoration, and the clean run's
    reuse (every family's end-to-end test calls this)."""
    from tests.protocols.fusion.fixtures import model_matched_copy

    data = tmp_path / "data"
    model_matched_copy(fusion_dir, f"tiny:{arch}", data)
    code = main(
        [
            "attack",
            "--model",
            f"tiny:{arch}",
            "--steps",
            "2",
            "--eps",
            "16/255",
            "--alpha",
            "8/255",
            "--batch-size",
            "2",
            "--limit",
            str(limit),
            "--data-dir",
            str(data),
            "--output",
            str(tmp_path / "runs"),
            "--verbosity",
            "quiet",
        ]
    )
    assert code == 0
    run_dir = next((tmp_path / "runs").glob("*/*"))
    summary = json.loads((run_dir / "attack.json").read_text())
    assert summary["n_clean_correct"] == limit and summary["pgd"]["eps"] == pytest.approx(16 / 255)
    rows = [json.loads(line) for line in (run_dir / "attack_outcomes.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * limit and {r["attack"] for r in rows} == {"vis_pgd", "end_pgd", "mantis"}
    for row in rows:
        assert row["error"] is None and row["response"] is not None
        assert row["linf_uint8"] <= 16 and (run_dir / row["image"]).is_file()
        # references are the clean answers, so a flip is exactly J failing on the re-checked answer
        assert row["flipped"] == (not judge("docvqa", row["response"], [row["clean_response"].strip() or "."]))
    for attack in ("vis_pgd", "end_pgd", "mantis"):
        flips = sum(r["flipped"] for r in rows if r["attack"] == attack)
        assert summary["asr"][attack] == pytest.approx(flips / limit)
        interval = summary["asr_intervals"][attack]  # over the limit items of C, in [0, 1]
        assert (interval["unit"], interval["n"]) == ("clean-correct item", limit)
        if interval["method"] is None:  # every item flipped alike: no spread to estimate an interval from
            share = f"{summary['asr'][attack]:.3g}"
            assert interval["reason"] == f"every resample of the {limit} clean-correct items gives {share}"
        else:
            assert interval["method"] == "paired_bootstrap"
            assert 0 <= interval["low"] <= summary["asr"][attack] <= interval["high"] <= 1
    diagnostics = [json.loads(line) for line in (run_dir / "diagnostics.jsonl").read_text().splitlines()]
    oars = [d["value"] for d in diagnostics if d["diagnostic"] == "oar"]
    assert len(oars) == limit and all(v is not None and v > 0 for v in oars)  # the region is in view
    clean = [d["value"] for d in diagnostics if d["diagnostic"] == "oar_clean"]
    assert len(clean) == limit and all(v is not None and v > 0 for v in clean)  # same region, matched clean image
    restored = [d for d in diagnostics if d["diagnostic"] == "restoration"]
    assert len(restored) == sum(r["flipped"] for r in rows if r["attack"] == "end_pgd")
    if arch == "qwen2_vl":  # a saved clean run is refused for another model
        assert main(["attack", "--model", "tiny:llava", "--clean-run", str(run_dir), "--verbosity", "quiet"]) == 2
    else:  # and reused for its own: the attack reads C from it and writes beside it
        assert (
            main(
                [
                    "attack",
                    "--model",
                    f"tiny:{arch}",
                    "--clean-run",
                    str(run_dir),
                    "--attacks",
                    "end_pgd",
                    "--steps",
                    "1",
                    "--diagnostics",
                    "none",
                    "--data-dir",
                    str(data),
                    "--verbosity",
                    "quiet",
                ]
            )
            == 0
        )
        again = json.loads((run_dir / "attack.json").read_text())
        assert again["attacks"] == ["end_pgd"] and again["n_clean_correct"] == limit


@pytest.mark.parametrize("arch", ["qwen3_vl", "qwen3_5"])
def test_l3_white_box_losses_and_diagnostics(arch: str) -> None:
    """The L3 families at the tensor level: every loss has a pixel gradient, OAR sees the region, and
    restoration runs through the DeepStack (Qwen3-VL) or hybrid linear-attention (Qwen3.5) decoder
    (``harness attack`` runs the same calls)."""
    from harness.protocols.fusion.attacks.diagnostics import layer_restoration, overlay_attention_ratio
    from harness.protocols.fusion.attacks.losses import WhiteBox

    wb = WhiteBox(create_backend(f"tiny:{arch}"))
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 96, 3), dtype=np.uint8))
    messages = [ChatMessage.user("Q?", [image])]
    batch = wb.batch([messages], ["red"], ["blue"])
    for name in ("end_loss", "mantis_loss"):
        x = [image_to_tensor(image).requires_grad_(True)]
        getattr(wb, name)(batch)(x).sum().backward()
        assert x[0].grad is not None and x[0].grad.abs().sum() > 0
    features = wb.image_features(wb.pixel_inputs([image_to_tensor(image)]))
    assert [tuple(f.shape) for f in features] == [(6, 64)]  # 96 x 64 -> 3 x 2 merged 32-pixel tokens
    value = overlay_attention_ratio(wb, messages, image.size, (0, 0, 32, 32))
    assert value is not None and value > 0
    restored, depths = layer_restoration(wb, messages, messages, 2, lambda text: False)
    assert (restored, depths) == (False, [])


def test_unsupported_families_are_refused_with_the_reason() -> None:
    from harness.protocols.fusion.attacks.preprocess import UNSUPPORTED, unsupported_message

    assert set(UNSUPPORTED) == {"qwen"}
    line = unsupported_message("qwen")
    assert "\n" not in line and "qwen3_vl" in line and "remote code" in line
    assert unsupported_message("paligemma").endswith("(not a paper family)")
    with pytest.raises(HarnessError, match="remote code"):
        differentiable_preprocess(None, "qwen")  # refused on the family, before the processor is read


def test_attack_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attack", "--model", "tiny:qwen2_vl", "--attacks", "fgsm", "--verbosity", "quiet"]) == 2
    assert "unknown fgsm" in capsys.readouterr().err
    assert main(["attack", "--model", "tiny:qwen2_vl", "--restoration-items", "0", "--verbosity", "quiet"]) == 2
    assert "--restoration-items must be at least 1" in capsys.readouterr().err
    assert main(["attack", "--model", "tiny:qwen2_vl", "--eps", "8/0"]) == 2
    assert "fraction" in capsys.readouterr().err
    assert main(["attack", "--model", "tiny:qwen2_vl", "--tasks", "a,b"]) == 2
    assert main(["attack", "--model", "tiny:qwen3", "--output", str(tmp_path)]) == 2  # before any work
    assert "not 'qwen3'" in capsys.readouterr().err and not any(tmp_path.iterdir())
    gemma = create_backend("tiny:gemma3").processor
    gemma.image_processor.do_pan_and_scan = True
    with pytest.raises(HarnessError, match="do_pan_and_scan"):
        differentiable_preprocess(gemma, "gemma3")


def test_a_failing_item_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    from harness.models.base import GenerationParams
    from harness.protocols.fusion.attacks.run import AttackOptions, CleanItem, run_attacks

    backend = create_backend("tiny:llava")
    image = Image.new("RGB", (40, 30), "white")
    messages = [ChatMessage.user("q", [image])]
    # a wrong answer equal to the clean answer leaves MANTIS no diverging token
    item = CleanItem("x", {"source": "mme", "answers": ["yes"], "wrong_answer": "yes"}, messages, image, "yes")
    opts = AttackOptions(attacks=("mantis",), pgd=PGDConfig(steps=1), diagnostics=(), show_progress=False)
    summary = run_attacks(backend, tmp_path, [item], GenerationParams(max_new_tokens=4), opts)
    row = json.loads((tmp_path / "attack_outcomes.jsonl").read_text())
    assert "identical" in row["error"] and row["flipped"] is False and summary.errors == 1


def test_layer_restoration_counts_only_reproduced_flips() -> None:
    from harness.protocols.fusion.attacks.diagnostics import RESTORATION_ITEMS, layer_restoration
    from harness.protocols.fusion.attacks.losses import WhiteBox
    from harness.protocols.fusion.attacks.run import AttackOptions

    assert RESTORATION_ITEMS == 40 and AttackOptions().restoration_items == 40  # the paper's subset size
    wb = WhiteBox(create_backend("tiny:qwen2_vl"))

    def messages(seed: int) -> list[ChatMessage]:
        image = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (56, 56, 3), dtype=np.uint8))
        return [ChatMessage.user("Q?", [image])]

    clean, adversarial = messages(1), messages(2)
    # the unrestored greedy answer already correct: the flip does not reproduce (outside the subset)
    assert layer_restoration(wb, clean, adversarial, 3, lambda text: True) == (None, [])
    # never correct: tried at every depth, restored at none
    assert layer_restoration(wb, clean, adversarial, 3, lambda text: False) == (False, [])
    # wrong only on the first (unrestored) decode: the flip reproduces and every depth then restores it
    calls: list[str] = []
    restored, depths = layer_restoration(wb, clean, adversarial, 3, lambda text: calls.append(text) or len(calls) > 1)
    n_layers = len(wb.model.get_decoder().layers)
    assert restored and depths == list(range(n_layers)) and len(calls) == 1 + n_layers


def test_attack_table_has_no_none_and_explains_an_empty_clean_set() -> None:
    from harness.protocols.fusion.attack_outcomes import AttackSummary
    from harness.protocols.fusion.cli import attack_table
    from harness.results.interval import Interval
    from harness.results.schema import ModelInfo

    def summary(n: int, asr: float | None, rate: float | None) -> AttackSummary:
        return AttackSummary(
            task="fusion_clean",
            attacks=["vis_pgd", "end_pgd"],
            pgd={"steps": 2},
            seed=0,
            batch_size=4,
            diagnostics=[],
            n_clean_correct=n,
            model=ModelInfo(smoke_test_model=True),
            time_s={"vis_pgd": 0.0, "end_pgd": 0.0},
            items_per_minute={"vis_pgd": rate, "end_pgd": rate},
            asr={"vis_pgd": asr, "end_pgd": asr},
            errors=0,
        )

    empty = attack_table("tiny:qwen2_vl", summary(0, None, None))
    assert "None" not in empty and "| vis_pgd | - | - |" in empty
    assert (
        "nothing to attack: the model answered none of the clean items of fusion_clean correctly (a "
        "random-weight smoke-test model answers almost none), and ASR is a share of C, so every figure below "
        "is `-`"
    ) in empty
    full = attack_table("tiny:qwen2_vl", summary(3, 1 / 3, 12.5))
    assert "| end_pgd | 0.333 | 12.5 |" in full and "nothing to attack" not in full  # an older attack.json
    interval = Interval.of(0.0, 1.0, "paired_bootstrap", 3, "clean-correct item")
    with_ci = attack_table(
        "tiny:qwen2_vl", summary(3, 1 / 3, 12.5).model_copy(update={"asr_intervals": {"end_pgd": interval}})
    )
    assert "| end_pgd | 0.333 [0.000, 1.000] | 12.5 |" in with_ci
    assert "Intervals: 95% CIs, paired_bootstrap over clean-correct items." in with_ci


def test_attack_with_nothing_to_attack_draws_no_empty_bars(
    fusion_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The offline demo's case: a random-weight model on the demo build answers no clean item correctly."""
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
                "--data-dir",
                str(fusion_dir.parent.parent),
                "--output",
                str(tmp_path / "runs"),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "clean-correct items |C| = 0" in captured.out and "nothing to attack" in captured.out
    assert "None" not in captured.out
    assert "0batch" not in captured.err and "0item" not in captured.err
