"""FusionAudit white-box attacks on the image-splitting families (Idefics3, SmolVLM): the differentiable
preprocessing against the real processor (tiles plus a global view, padded batches, one-view and
no-splitting paths), its straight-through gradient, token geometry by hand against the prompt and the
model's pixel shuffle, the losses and diagnostics, and ``harness attack`` on tiny SmolVLM."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from harness.cli import main
from harness.errors import HarnessError
from harness.models.base import GenerationParams, GenerationRequest, create_backend
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.pixels import image_to_tensor
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess
from tests.protocols.fusion.fixtures import noise

# (width, height): 2 x 2 tiles (downscaled, upscaled, odd sizes), 1 x 2 and 2 x 1 tiles, a thin odd image
SIZES = [(100, 70), (56, 56), (28, 28), (161, 113), (30, 28), (100, 20), (20, 100), (7, 300)]


@cache
def backend(arch: str) -> Any:
    return create_backend(f"tiny:{arch}")


def ask(image: Image.Image, text: str = "What color?") -> list[ChatMessage]:
    return [ChatMessage.user(text, [image])]


def processor(**kwargs: Any) -> Any:
    """The tiny SmolVLM's processor loaded from its folder with ``kwargs`` (as a user's config sets them)."""
    from transformers import AutoProcessor

    from harness.tiny_models import tiny_model_path

    return AutoProcessor.from_pretrained(tiny_model_path("smolvlm"), **kwargs)


def assert_equal_to_processor(proc: Any, images: list[Image.Image]) -> dict[str, Any]:
    """The copy's outputs equal the processor's for these images, one per prompt (the attacks' batches)."""
    pre = differentiable_preprocess(proc, "smolvlm")
    real = proc.image_processor(images=[[im] for im in images], return_tensors="pt")
    mine = pre([image_to_tensor(im) for im in images])
    assert set(mine) == set(real) and all(torch.equal(mine[k], real[k]) for k in real)
    return dict(real)


def float_chain(ip: Any, x: Any) -> Any:
    """The processor's own resizes, split and normalisation on the unquantised float image (autograd's path)."""
    resized = ip.resize_for_vision_encoder(
        ip.resize(x[None] * 255, ip.size, resample=ip.resample), ip.max_image_size["longest_edge"], resample=ip.resample
    )
    frames, _, _ = ip.split_images(resized, ip.max_image_size, resample=ip.resample)
    return ip.rescale_and_normalize(
        frames[0], ip.do_rescale, ip.rescale_factor, ip.do_normalize, ip.image_mean, ip.image_std
    )


@pytest.mark.parametrize("arch", ["idefics3", "smolvlm"])
def test_splitting_preprocessing_equals_the_processor(arch: str) -> None:
    proc = backend(arch).processor
    ip = proc.image_processor
    pre = differentiable_preprocess(proc, arch)
    for width, height in SIZES:
        image = noise(width, height)
        real = ip(images=[[image]], return_tensors="pt")
        x = image_to_tensor(image).requires_grad_(True)
        mine = pre([x])
        assert torch.equal(mine["pixel_values"], real["pixel_values"])
        assert torch.equal(mine["pixel_attention_mask"], real["pixel_attention_mask"])
        # one <image> token block of image_seq_len per view
        assert len(pre.geometry(width, height).boxes) == real["pixel_values"].shape[1] * proc.image_seq_len
        # the straight-through gradient (LANCZOS adjoints through three resizes) is autograd's through the
        # processor's float resizes
        weights = torch.randn(mine["pixel_values"].shape[1:], generator=torch.Generator().manual_seed(1))
        (got,) = torch.autograd.grad((mine["pixel_values"][0] * weights).sum(), x)
        (expected,) = torch.autograd.grad((float_chain(ip, x) * weights).sum(), x)
        assert got.abs().sum() > 0
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-3)
    # a batch of different tile counts (5, 3, 3, 5 views) is zero-padded to 5 views, masked out
    images = [noise(w, h, seed) for seed, (w, h) in enumerate([(100, 70), (100, 20), (20, 100), (56, 56)])]
    real = ip(images=[[im] for im in images], return_tensors="pt")
    mine = pre([image_to_tensor(im) for im in images])
    assert torch.equal(mine["pixel_values"], real["pixel_values"])
    assert torch.equal(mine["pixel_attention_mask"], real["pixel_attention_mask"])
    assert real["pixel_attention_mask"].flatten(2).amax(-1).tolist() == [
        [1] * 5,
        [1] * 3 + [0] * 2,
        [1] * 3 + [0] * 2,
        [1] * 5,
    ]


def test_larger_grids_one_view_and_no_splitting() -> None:
    """A longest edge of three views gives 3 x 3 and 2 x 3 tile grids; an image that fits one view, and
    any image without splitting, is one view (the global one); without padding there is no mask."""
    big = processor(size={"longest_edge": 168})
    real = assert_equal_to_processor(big, [noise(161, 113), noise(100, 40, 1)])
    assert real["pixel_values"].shape[1] == 10  # 3 x 3 tiles + global; the 2 x 3 image pads from 7
    pre = differentiable_preprocess(big, "smolvlm")
    assert [len(pre.geometry(w, h).boxes) for w, h in [(161, 113), (100, 40)]] == [40, 28]
    for proc in (processor(size={"longest_edge": 56}), processor(do_image_splitting=False)):
        real = assert_equal_to_processor(proc, [noise(100, 70), noise(20, 100, 1)])
        assert real["pixel_values"].shape[1] == 1
        # the global view squashes 100 x 70 to 56 x 56: 2 x 2 cells of 50 x 35
        boxes = differentiable_preprocess(proc, "smolvlm").geometry(100, 70).boxes
        assert boxes.tolist() == [[0, 0, 50, 35], [50, 0, 100, 35], [0, 35, 50, 70], [50, 35, 100, 70]]
        text = proc(text=["<image>"], images=[[noise(100, 70)]])["input_ids"][0]
        assert text.count(proc.image_token_id) == len(boxes)
    unpadded = processor(do_pad=False)
    assert set(assert_equal_to_processor(unpadded, [noise(100, 70), noise(56, 56, 1)])) == {"pixel_values"}


def test_geometry_by_hand_against_the_prompt_and_the_pixel_shuffle() -> None:
    b = backend("smolvlm")
    pre = differentiable_preprocess(b.processor, "smolvlm")
    # 100 x 20: longest edge 112 -> 112 x 22, to multiples of 56 -> 112 x 56: tiles 1 x 2, then the global
    # view; a 56-pixel view holds 2 x 2 tokens of 28 pixels = 25 x 10 on the image in a tile (x 100/112,
    # x 20/56) and 50 x 10 in the global view (x 100/56, x 20/56)
    boxes = pre.geometry(100, 20).boxes
    np.testing.assert_allclose(
        boxes,
        [
            [0, 0, 25, 10],
            [25, 0, 50, 10],
            [0, 10, 25, 20],
            [25, 10, 50, 20],  # <row_1_col_1>
            [50, 0, 75, 10],
            [75, 0, 100, 10],
            [50, 10, 75, 20],
            [75, 10, 100, 20],  # <row_1_col_2>
            [0, 0, 50, 10],
            [50, 0, 100, 10],
            [0, 10, 50, 20],
            [50, 10, 100, 20],
        ],
    )  # <global-img>
    # 20 x 100: tiles 2 x 1 (112 x 56), each 2 x 2 tokens of 10 x 25; global tokens 10 x 50
    np.testing.assert_allclose(
        pre.geometry(20, 100).boxes[[0, 3, 4, 7, 8, 11]],
        [[0, 0, 10, 25], [10, 25, 20, 50], [0, 50, 10, 75], [10, 75, 20, 100], [0, 0, 10, 50], [10, 50, 20, 100]],
    )
    # the prompt has one <image> token per box, in blocks of tiles (row-major) then the global view
    for (width, height), tiles in [
        ((100, 20), ["<row_1_col_1>", "<row_1_col_2>"]),
        ((20, 100), ["<row_1_col_1>", "<row_2_col_1>"]),
    ]:
        messages = ask(noise(width, height))
        ids = b.prepare_inputs([messages])["input_ids"][0]
        assert int((ids == b.model.config.image_token_id).sum()) == len(pre.geometry(width, height).boxes) == 12
        text = b.tokenizer.decode(ids)
        marks = [text.index(tag) for tag in [*tiles, "<global-img>"]]
        assert marks == sorted(marks) and "row_2_col_2" not in text
    # the models' pixel shuffle (Idefics3's connector is the same on a 4 x 4 patch grid): token k of a view
    # holds the 2 x 2 patches of cell (k // 2, k % 2), row-major, as the global view's boxes say
    global_view = (boxes[8:] / [50, 10, 50, 10]).astype(int).tolist()
    grid = torch.tensor([[r, c] for r in range(4) for c in range(4)], dtype=torch.float)[None]
    for model in (b.model, backend("idefics3").model):
        shuffled = model.model.connector.pixel_shuffle(grid, 2)[0].view(4, -1, 2)
        cells = [
            [int(t[:, 1].min()) // 2, int(t[:, 0].min()) // 2, int(t[:, 1].max()) // 2 + 1, int(t[:, 0].max()) // 2 + 1]
            for t in shuffled
        ]  # (col0, row0, col1, row1) in 2-patch cells
        assert cells == global_view


def test_hf_backend_renders_and_generates_smolvlm() -> None:
    b = backend("smolvlm")
    assert b.model_type == "smolvlm" and b.is_multimodal
    text, images = b._render(ask(noise(100, 70), "Q?"))
    assert text == "<|im_start|>User:<image>Q?<end_of_utterance>\nAssistant:" and len(images) == 1
    # a batch of 5-view and 3-view images (padded, masked) answers as each one alone
    greedy = GenerationParams(max_new_tokens=3)
    reqs = [GenerationRequest("a", ask(noise(100, 70)), greedy), GenerationRequest("b", ask(noise(100, 20)), greedy)]
    batched = b.generate(reqs)
    assert batched == [b.generate([r])[0] for r in reqs] and all(isinstance(o[0], str) for o in batched)


def test_idefics3_losses_and_diagnostics() -> None:
    """Tiny Idefics3 at the tensor level: every loss has a pixel gradient, the features are one token
    per view, OAR sees the region and restoration runs (``harness attack`` makes the same calls)."""
    from harness.protocols.fusion.attacks.diagnostics import layer_restoration, overlay_attention_ratio
    from harness.protocols.fusion.attacks.losses import WhiteBox

    wb = WhiteBox(create_backend("tiny:idefics3"))
    image = noise(96, 64)
    messages = ask(image, "Q?")
    clean = wb.image_features(wb.pixel_inputs([image_to_tensor(image)]))
    assert [tuple(f.shape) for f in clean] == [(5, 64)]  # 2 x 2 tiles + global, one token each
    batch = wb.batch([messages], ["red"], ["blue"])
    losses = {"vis": wb.vis_loss(batch, clean), "end": wb.end_loss(batch), "mantis": wb.mantis_loss(batch)}
    with torch.no_grad():  # the clean image's features are its own
        assert losses["vis"]([image_to_tensor(image)]).item() == pytest.approx(-1.0, abs=1e-5)
    for name, loss in losses.items():  # each loss has a pixel gradient at another image
        pixels = image_to_tensor(noise(96, 64, 1)).requires_grad_(True)
        loss([pixels]).sum().backward()
        assert pixels.grad is not None and pixels.grad.abs().sum() > 0, name
    value = overlay_attention_ratio(wb, messages, image.size, (0, 0, 48, 32))
    assert value is not None and value > 0
    assert layer_restoration(wb, messages, messages, 2, lambda text: False) == (False, [])


def test_bad_processor_settings_are_refused() -> None:
    odd = processor()
    odd.image_seq_len = 3
    with pytest.raises(HarnessError, match="image_seq_len 3 is not a square token grid"):
        differentiable_preprocess(odd, "smolvlm")


def test_harness_attack_on_tiny_smolvlm(fusion_dir: Path, tmp_path: Path) -> None:
    from harness.protocols.fusion.judge import judge
    from tests.protocols.fusion.fixtures import model_matched_copy

    data = tmp_path / "data"
    model_matched_copy(fusion_dir, "tiny:smolvlm", data)
    code = main(
        [
            "attack",
            "--model",
            "tiny:smolvlm",
            "--steps",
            "2",
            "--eps",
            "16/255",
            "--alpha",
            "8/255",
            "--batch-size",
            "2",
            "--limit",
            "2",
            "--restoration-items",
            "1",
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
    assert summary["n_clean_correct"] == 2
    rows = [json.loads(line) for line in (run_dir / "attack_outcomes.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and {r["attack"] for r in rows} == {"vis_pgd", "end_pgd", "mantis"}
    for row in rows:
        assert row["error"] is None and row["linf_uint8"] <= 16 and (run_dir / row["image"]).is_file()
        assert row["flipped"] == (not judge("docvqa", row["response"], [row["clean_response"].strip() or "."]))
    diagnostics = [json.loads(line) for line in (run_dir / "diagnostics.jsonl").read_text().splitlines()]
    for kind in ("oar", "oar_clean"):
        values = [d["value"] for d in diagnostics if d["diagnostic"] == kind]
        assert len(values) == 2 and all(v is not None and v > 0 for v in values)
    restored = [d for d in diagnostics if d["diagnostic"] == "restoration"]
    # restoration (on the first End-PGD flip only, to keep the test short) swaps the tiles' and global view's states
    assert len(restored) == min(1, sum(r["flipped"] for r in rows if r["attack"] == "end_pgd"))


def test_a_missing_processor_dependency_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """SmolVLM's processor needs num2words; without it, loading the model says so in one line."""
    from harness.errors import ModelSpecError
    from harness.tiny_models import tiny_model_path

    path = tiny_model_path("smolvlm")
    monkeypatch.setattr("transformers.models.smolvlm.processing_smolvlm.num2words", None)
    with pytest.raises(ModelSpecError, match="num2words") as info:
        create_backend(f"hf:{path}")
    assert "\n" not in str(info.value)
