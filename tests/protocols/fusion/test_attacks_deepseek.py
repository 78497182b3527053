"""DeepSeek-VL's and its hybrid's differentiable padded-square preprocessing against the real processor
(wide, tall, upscaled and min-size images, both views of the hybrid), its token footprints by hand, its
refusals, and ``harness attack`` on the tiny models."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from harness.models.base import create_backend
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.padded_square import PaddedSquarePreprocess
from harness.protocols.fusion.attacks.pixels import image_to_tensor
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess
from tests.protocols.fusion.fixtures import noise, prompt_image_tokens

ARCHS = ["deepseek_vl", "deepseek_vl_hybrid"]
# (width, height): a square; wide; tall below min_size; an upscale; a very wide one at min_size; odd sizes
SIZES = [(28, 28), (100, 70), (20, 90), (13, 9), (300, 41), (57, 57), (161, 113)]


@pytest.fixture(scope="module", params=ARCHS)
def backend(request: pytest.FixtureRequest) -> Any:
    return create_backend(f"tiny:{request.param}")


def _float_chain(pre: PaddedSquarePreprocess) -> PaddedSquarePreprocess:
    """The same copy with the processor's float resize of the unquantised pixels: autograd's gradient
    through it is what the straight-through estimator must give."""
    out = copy.copy(pre)
    out._resize = lambda images, size, resample: pre.ip.resize(  # type: ignore[method-assign]
        images * 255, size=size, min_size=pre.ip.min_size, resample=resample
    )
    return out


def test_padded_square_preprocessing_equals_the_processor(backend: Any) -> None:
    processor = backend.processor
    pre = differentiable_preprocess(processor, backend.model_type)
    assert isinstance(pre, PaddedSquarePreprocess)
    keys = {"pixel_values", "high_res_pixel_values"} if backend.model_type == "deepseek_vl_hybrid" else {"pixel_values"}
    rng = np.random.default_rng(0)
    for width, height in SIZES:
        image = noise(width, height, rng)
        real = processor.image_processor(images=[image], return_tensors="pt")
        x = image_to_tensor(image).requires_grad_(True)
        mine = pre([x])
        assert set(mine) == set(real) == keys
        for key in keys:
            assert torch.equal(mine[key], real[key]), (key, width, height)
        # one footprint per image token of the prompt
        assert len(pre.geometry(width, height).boxes) == prompt_image_tokens(processor, image) == 16
        weights = {key: torch.randn(mine[key].shape, generator=torch.Generator().manual_seed(1)) for key in keys}
        (got,) = torch.autograd.grad(sum((mine[key] * weights[key]).sum() for key in keys), x)
        assert got.abs().sum() > 0
        # the straight-through gradient is autograd's through the whole float chain (both of the hybrid's resizes)
        y = x.detach().requires_grad_(True)
        floats = _float_chain(pre)([y])
        (expected,) = torch.autograd.grad(sum((floats[key] * weights[key]).sum() for key in keys), y)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)


def test_a_mixed_batch_is_stacked_in_input_order(backend: Any) -> None:
    pre = differentiable_preprocess(backend.processor, backend.model_type, dtype=torch.float32)
    rng = np.random.default_rng(1)
    images = [noise(w, h, rng) for w, h in [(100, 70), (28, 28), (20, 90), (100, 70)]]
    real = backend.processor.image_processor(images=images, return_tensors="pt")
    mine = pre([image_to_tensor(im) for im in images])
    assert tuple(mine["pixel_values"].shape) == (4, 3, 28, 28)
    for key, value in mine.items():
        assert torch.equal(value, real[key])


def test_token_footprints_by_hand() -> None:
    pre = differentiable_preprocess(create_backend("tiny:deepseek_vl").processor, "deepseek_vl")
    quarters = [0, 25, 50, 75, 100]
    # 100 x 70 -> 28 x 20, padded 4 rows above: 7-pixel cells, square y 7r - 4 -> image y (7r - 4) * 3.5
    rows = [(0, 10.5), (10.5, 35), (35, 59.5), (59.5, 70)]
    np.testing.assert_allclose(
        pre.geometry(100, 70).boxes, [[quarters[c], y0, quarters[c + 1], y1] for y0, y1 in rows for c in range(4)]
    )
    # 300 x 41 -> 28 x 4, raised to min_size 14, padded 7 rows above: the first and last token rows lie
    # over the padding and cover no image (empty boxes); the middle rows each cover half the image
    boxes = pre.geometry(300, 41).boxes
    cols = [0, 75, 150, 225, 300]
    rows = [(0, 0), (0, 20.5), (20.5, 41), (41, 41)]
    np.testing.assert_allclose(boxes, [[cols[c], y0, cols[c + 1], y1] for y0, y1 in rows for c in range(4)])
    coverage, areas = pre.geometry(300, 41).coverage((0, 0, 300, 41))
    assert areas[:4].tolist() == [0] * 4 and areas[12:].tolist() == [0] * 4
    assert coverage[4:12].tolist() == [1.0] * 8 and areas[4] == pytest.approx(75 * 20.5)
    # 20 x 90 (tall) -> 14 x 28, padded 7 columns left: the outer token columns are empty
    boxes = pre.geometry(20, 90).boxes.reshape(4, 4, 4)
    np.testing.assert_allclose(boxes[:, :, [0, 2]], [[[0, 0], [0, 10], [10, 20], [20, 20]]] * 4)
    np.testing.assert_allclose(boxes[:, 0, [1, 3]], [[0, 22.5], [22.5, 45], [45, 67.5], [67.5, 90]])


def test_hybrid_token_footprints_follow_the_high_resolution_square() -> None:
    pre = differentiable_preprocess(create_backend("tiny:deepseek_vl_hybrid").processor, "deepseek_vl_hybrid")
    # 100 x 70 -> SAM's 56 x 39, padded 8 rows above; SigLIP sees that square resized to 28: 14-pixel cells
    # of the 56 square, square y 14r - 8 -> image y (14r - 8) * 70 / 39
    rows = [(0, 6 * 70 / 39), (6 * 70 / 39, 20 * 70 / 39), (20 * 70 / 39, 34 * 70 / 39), (34 * 70 / 39, 70)]
    quarters = [0, 25, 50, 75, 100]
    np.testing.assert_allclose(
        pre.geometry(100, 70).boxes, [[quarters[c], y0, quarters[c + 1], y1] for y0, y1 in rows for c in range(4)]
    )


def test_unplaceable_processor_settings_are_refused() -> None:
    processor = create_backend("tiny:deepseek_vl").processor
    for option in ("do_pad", "do_resize"):
        off = copy.deepcopy(processor)
        setattr(off.image_processor, option, False)
        with pytest.raises(HarnessError, match=f"{option}=False"):
            differentiable_preprocess(off, "deepseek_vl")
    oblong = copy.deepcopy(processor)
    oblong.num_image_tokens = 12
    with pytest.raises(HarnessError, match=r"square grid.*num_image_tokens=12"):
        differentiable_preprocess(oblong, "deepseek_vl")


def test_losses_and_diagnostics_on_tiny_deepseek(backend: Any) -> None:
    """Every loss has a pixel gradient, the fused image features line up with the footprints, OAR over the
    whole image is exactly 1 (tokens over the padding have no footprint), and restoration runs."""
    from harness.protocols.fusion.attacks.diagnostics import layer_restoration, overlay_attention_ratio
    from harness.protocols.fusion.attacks.losses import WhiteBox

    wb = WhiteBox(backend)
    image = noise(300, 41, 2)
    messages = [ChatMessage.user("Q?", [image])]
    batch = wb.batch([messages], ["red"], ["blue"])
    clean = wb.image_features(wb.pixel_inputs([image_to_tensor(image)]))
    assert [tuple(f.shape) for f in clean] == [(16, 64)]  # the 4 x 4 grid, SigLIP and SAM fused per cell
    for name, args in (("vis_loss", (batch, clean)), ("end_loss", (batch,)), ("mantis_loss", (batch,))):
        x = [image_to_tensor(image).requires_grad_(True)]
        getattr(wb, name)(*args)(x).sum().backward()
        assert x[0].grad is not None and x[0].grad.abs().sum() > 0
    assert overlay_attention_ratio(wb, messages, image.size, (0, 0, 300, 41)) == pytest.approx(1.0)
    left = overlay_attention_ratio(wb, messages, image.size, (0, 0, 75, 41))
    assert left is not None and left > 0
    assert layer_restoration(wb, messages, messages, 2, lambda text: False) == (False, [])


@pytest.mark.parametrize("arch", ARCHS)
def test_harness_attack_on_tiny_deepseek(arch: str, fusion_dir: Path, tmp_path: Path) -> None:
    """``harness attack`` end to end through the hf loading path: every attack, OAR and restoration."""
    from tests.protocols.fusion.test_attacks import attack_end_to_end

    attack_end_to_end(arch, fusion_dir, tmp_path)
