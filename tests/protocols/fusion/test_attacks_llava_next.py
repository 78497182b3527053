"""LLaVA-NeXT's differentiable any-resolution preprocessing against the real processor (tiles, base
view, batch padding), its token footprints by hand, its refusals, and ``harness attack`` on the tiny model."""

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
from harness.protocols.fusion.attacks.anyres import AnyResPreprocess
from harness.protocols.fusion.attacks.pixels import image_to_tensor
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess
from tests.protocols.fusion.fixtures import noise, prompt_image_tokens

# (width, height): four tiles of a wide image; an exact grid; one tile; an odd downscale; a tall image whose
# unpadded grid keeps no column; an upscale; kept grid rows over the padding; a very wide one (no grid row kept)
SIZES = [(100, 70), (56, 56), (28, 28), (161, 113), (20, 90), (13, 9), (70, 55), (300, 41)]


@pytest.fixture(scope="module")
def backend() -> Any:
    return create_backend("tiny:llava_next")


def _resized_views(processor: Any) -> Any:
    """The tiny processor with a 32-pixel per-view resize before its 28-pixel crop (tiles and base view
    are resized 28 -> 32 or squashed to 32, then center-cropped by 2 pixels)."""
    from transformers.image_utils import SizeDict

    out = copy.deepcopy(processor)
    out.image_processor.size = SizeDict(shortest_edge=32)
    return out


def _float_chain(pre: AnyResPreprocess) -> AnyResPreprocess:
    """The same copy with the processor's float resize of the unquantised pixels: autograd's gradient
    through it is what the straight-through estimator must give."""
    out = copy.copy(pre)
    out._resize = lambda images, size: pre.ip.resize(images * 255, size=size, resample=pre.ip.resample)  # type: ignore[method-assign]
    return out


@pytest.mark.parametrize("variant", ["tiny", "resized_views"])
def test_anyres_preprocessing_equals_the_processor(backend: Any, variant: str) -> None:
    processor = backend.processor if variant == "tiny" else _resized_views(backend.processor)
    pre = differentiable_preprocess(processor, backend.model_type)
    assert isinstance(pre, AnyResPreprocess)
    rng = np.random.default_rng(0)
    for width, height in SIZES:
        image = noise(width, height, rng)
        real = processor.image_processor(images=[image], return_tensors="pt")
        x = image_to_tensor(image).requires_grad_(True)
        mine = pre([x])
        assert torch.equal(mine["pixel_values"], real["pixel_values"])
        assert torch.equal(mine["image_sizes"], real["image_sizes"])
        # one footprint per image token of the prompt
        assert len(pre.geometry(width, height).boxes) == prompt_image_tokens(processor, image)
        weights = torch.randn(mine["pixel_values"].shape, generator=torch.Generator().manual_seed(1))
        (got,) = torch.autograd.grad((mine["pixel_values"] * weights).sum(), x)
        assert got.abs().sum() > 0
        # the straight-through gradient is autograd's gradient through the whole float chain (both resizes)
        y = x.detach().requires_grad_(True)
        (expected,) = torch.autograd.grad((_float_chain(pre)([y])["pixel_values"] * weights).sum(), y)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)


def test_a_mixed_batch_is_zero_padded_to_its_largest_tile_count(backend: Any) -> None:
    pre = differentiable_preprocess(backend.processor, backend.model_type, dtype=torch.float32)
    rng = np.random.default_rng(1)
    images = [noise(w, h, rng) for w, h in [(28, 28), (100, 70), (20, 90)]]  # 1 + 1, 1 + 4 and 1 + 2 views
    real = backend.processor.image_processor(images=images, return_tensors="pt")
    mine = pre([image_to_tensor(im) for im in images])
    assert tuple(mine["pixel_values"].shape) == (3, 5, 3, 28, 28)
    assert torch.equal(mine["pixel_values"], real["pixel_values"])
    assert mine["image_sizes"].tolist() == [[28, 28], [70, 100], [90, 20]]
    assert not mine["pixel_values"][0, 2:].any() and not mine["pixel_values"][2, 3:].any()


def test_token_footprints_by_hand(backend: Any) -> None:
    pre = differentiable_preprocess(backend.processor, backend.model_type)
    empty = [0, 0, 0, 0]
    # 100 x 70: base view squashed to 28 x 28 (2 x 2 tokens of 50 x 35); grid 56 x 56, the image resized to
    # 56 x 40 and padded 8 rows above and below; the model keeps token rows 1-2 of 4 (canvas y 14-42 ->
    # image y 10.5-59.5, x in quarters of 25), each row then a newline token
    row1 = [[0, 10.5, 25, 35], [25, 10.5, 50, 35], [50, 10.5, 75, 35], [75, 10.5, 100, 35], empty]
    row2 = [[0, 35, 25, 59.5], [25, 35, 50, 59.5], [50, 35, 75, 59.5], [75, 35, 100, 59.5], empty]
    base = [[0, 0, 50, 35], [50, 0, 100, 35], [0, 35, 50, 70], [50, 35, 100, 70]]
    np.testing.assert_allclose(pre.geometry(100, 70).boxes, base + row1 + row2)
    # 70 x 55: resized to 56 x 44, padded 6 rows each side; all 4 token rows are kept, the outer two reach
    # into the padding and are clipped to the image: canvas y 0-14 -> image y 0-10, y 42-56 -> 45-55
    boxes = pre.geometry(70, 55).boxes
    assert len(boxes) == 4 + 4 * 5
    np.testing.assert_allclose(
        boxes[4:9], [[0, 0, 17.5, 10], [17.5, 0, 35, 10], [35, 0, 52.5, 10], [52.5, 0, 70, 10], empty]
    )
    np.testing.assert_allclose(boxes[19:24, 1::2], [[45, 55]] * 4 + [[0, 0]])
    coverage, areas = pre.geometry(70, 55).coverage((0, 0, 70, 5))
    assert coverage[4] == pytest.approx(0.5) and areas[4] == pytest.approx(175) and areas[8] == 0
    # 20 x 90: the 2-column grid unpads to no column, leaving the base view and 4 newline tokens
    assert pre.geometry(20, 90).boxes[4:].tolist() == [empty] * 4
    # 300 x 41: no grid row survives, so no newline either: the base view alone
    assert pre.geometry(300, 41).boxes.tolist() == [
        [0, 0, 150, 20.5],
        [150, 0, 300, 20.5],
        [0, 20.5, 150, 41],
        [150, 20.5, 300, 41],
    ]


def test_token_footprints_through_the_per_view_resize_and_crop(backend: Any) -> None:
    pre = differentiable_preprocess(_resized_views(backend.processor), backend.model_type)
    # 64 x 32: base squashed to 32 x 32 then cropped at offset 2 -> x (2 + 14 c) * 2, y 2 + 14 r; grid 28 x 56
    # (two tiles, no padding), each tile (32 image pixels a side) resized to 32 and cropped at offset 2
    base = [[4, 2, 32, 16], [32, 2, 60, 16], [4, 16, 32, 30], [32, 16, 60, 30]]
    rows = [
        [[2, y, 16, y + 14], [16, y, 30, y + 14], [34, y, 48, y + 14], [48, y, 62, y + 14], [0, 0, 0, 0]]
        for y in (2, 16)
    ]
    np.testing.assert_allclose(pre.geometry(64, 32).boxes, base + rows[0] + rows[1])


def test_unplaceable_processor_settings_are_refused(backend: Any) -> None:
    odd_grid = copy.deepcopy(backend.processor)
    odd_grid.image_processor.image_grid_pinpoints = [[28, 28], [28, 42]]
    with pytest.raises(HarnessError, match=r"divide every grid resolution.*\[28, 42\]"):
        differentiable_preprocess(odd_grid, "llava_next")
    oblong = copy.deepcopy(backend.processor)
    oblong.image_processor.crop_size.width = 42
    with pytest.raises(HarnessError, match="crop size 28x42"):
        differentiable_preprocess(oblong, "llava_next")
    full = copy.deepcopy(backend.processor)
    full.vision_feature_select_strategy = "full"  # keeps the CLS token of every view
    with pytest.raises(HarnessError, match=r"keeps 1 extra token\(s\) per view"):
        differentiable_preprocess(full, "llava_next")


def test_losses_and_diagnostics_on_tiny_llava_next(backend: Any) -> None:
    """Every loss has a pixel gradient, the packed image features line up with the footprints, OAR over the
    whole image is exactly 1 (every token with a footprint fully inside), and restoration runs."""
    from harness.protocols.fusion.attacks.diagnostics import layer_restoration, overlay_attention_ratio
    from harness.protocols.fusion.attacks.losses import WhiteBox

    wb = WhiteBox(backend)
    image = noise(100, 70, 2)
    messages = [ChatMessage.user("Q?", [image])]
    batch = wb.batch([messages], ["red"], ["blue"])
    clean = wb.image_features(wb.pixel_inputs([image_to_tensor(image)]))
    assert [tuple(f.shape) for f in clean] == [(14, 64)]  # 4 base tokens, 2 grid rows of 4 and a newline
    for name, args in (("vis_loss", (batch, clean)), ("end_loss", (batch,)), ("mantis_loss", (batch,))):
        x = [image_to_tensor(image).requires_grad_(True)]
        getattr(wb, name)(*args)(x).sum().backward()
        assert x[0].grad is not None and x[0].grad.abs().sum() > 0
    assert overlay_attention_ratio(wb, messages, image.size, (0, 0, 100, 70)) == pytest.approx(1.0)
    top_left = overlay_attention_ratio(wb, messages, image.size, (0, 0, 50, 35))
    assert top_left is not None and top_left > 0
    assert layer_restoration(wb, messages, messages, 2, lambda text: False) == (False, [])


def test_harness_attack_on_tiny_llava_next(fusion_dir: Path, tmp_path: Path) -> None:
    """``harness attack`` end to end through the hf loading path: every attack, OAR and restoration."""
    from tests.protocols.fusion.test_attacks import attack_end_to_end

    attack_end_to_end("llava_next", fusion_dir, tmp_path)
