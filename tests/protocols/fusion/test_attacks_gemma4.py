"""FusionAudit white-box attacks on Gemma 4: the patch-budget preprocessing against the real processor
(upscaled, unchanged, downscaled, odd and one-row images), its token geometry, the losses and
diagnostics through the per-layer-embedding, KV-sharing decoder, and ``harness attack`` on tiny Gemma 4."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from harness.errors import HarnessError
from harness.models.base import create_backend
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.pixels import QuantisedResize, image_to_tensor
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess
from tests.protocols.fusion.fixtures import noise


def ask(image: Image.Image, text: str = "Q?") -> list[ChatMessage]:
    return [ChatMessage.user(text, [image])]


# (width, height) -> soft tokens: 48-pixel cells (16-pixel patches pooled 3 x 3), at most 70 of them
SIZES = {
    (64, 48): 63,  # upscaled to 432 x 336: 9 x 7
    (432, 336): 63,  # already a budget size: kept as it is
    (1000, 900): 56,  # downscaled to 384 x 336: 8 x 7
    (161, 113): 63,  # odd sides: 432 x 336
    (700, 5): 70,  # too flat for a full cell row: one row of 48 pixels, 3360 wide (the longest side allowed)
    (5, 700): 70,
}  # and its transpose: one column


def test_patch_budget_preprocessing_equals_the_processor() -> None:
    backend = create_backend("tiny:gemma4")
    pre = differentiable_preprocess(backend.processor, backend.model_type)
    for seed, ((width, height), tokens) in enumerate(SIZES.items()):
        image = noise(width, height, seed)
        real = backend.processor.image_processor(images=[image], return_tensors="pt")
        x = image_to_tensor(image).requires_grad_(True)
        mine = pre([x])
        assert set(mine) == {"pixel_values", "image_position_ids"}
        assert torch.equal(mine["pixel_values"], real["pixel_values"])
        assert torch.equal(mine["image_position_ids"], real["image_position_ids"])
        assert real["num_soft_tokens_per_image"].tolist() == [tokens] == [len(pre.geometry(width, height).boxes)]
        mine["pixel_values"].square().sum().backward()
        assert x.grad is not None and x.grad.abs().sum() > 0
        # the straight-through gradient is autograd's gradient through the processor's float resize
        images = x.detach()[None].requires_grad_(True)
        weights = torch.randn(pre._resize(images.detach() * 255).shape, generator=torch.Generator().manual_seed(1))
        (expected,) = torch.autograd.grad((pre._resize(images * 255) * weights).sum(), images)
        (got,) = torch.autograd.grad((QuantisedResize.apply(images, pre._resize, pre.adjoint) * weights).sum(), images)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    # a batch of mixed sizes: each image padded to the 630-patch budget, in input order
    batch = [noise(64, 48, 1), noise(700, 5, 2), noise(64, 48, 3)]
    real = backend.processor.image_processor(images=batch, return_tensors="pt")
    mine = pre([image_to_tensor(im) for im in batch])
    assert mine["pixel_values"].shape == (3, 630, 768)
    assert torch.equal(mine["pixel_values"], real["pixel_values"])
    assert torch.equal(mine["image_position_ids"], real["image_position_ids"])


def test_patch_budget_geometry() -> None:
    backend = create_backend("tiny:gemma4")
    pre = differentiable_preprocess(backend.processor, backend.model_type)
    # 64 x 48 -> 432 x 336: 9 x 7 cells of 48 pixels, each 64/9 x 48/7 original pixels, row-major
    boxes = pre.geometry(64, 48).boxes
    assert boxes.shape == (63, 4)
    np.testing.assert_allclose(
        boxes[[0, 1, 9, 62]],
        [[0, 0, 64 / 9, 48 / 7], [64 / 9, 0, 128 / 9, 48 / 7], [0, 48 / 7, 64 / 9, 96 / 7], [512 / 9, 288 / 7, 64, 48]],
    )
    # as many boxes as the prompt has image tokens
    inputs = backend.prepare_inputs([ask(noise(64, 48))])
    assert int((inputs["input_ids"] == backend.model.config.image_token_id).sum()) == 63
    coverage, areas = pre.geometry(64, 48).coverage((0, 0, 64 / 9, 24 / 7))
    assert coverage[0] == pytest.approx(0.5) and coverage[1:].sum() == 0
    assert areas[0] == pytest.approx(64 / 9 * 48 / 7)
    # 700 x 5 -> 3360 x 48: one row of 70 cells, 10 x 5 original pixels each
    np.testing.assert_allclose(pre.geometry(700, 5).boxes, [[10 * c, 0, 10 * c + 10, 5] for c in range(70)])
    # without the resize, a 96 x 48 image is 6 x 3 patches: two pooled tokens
    processor = copy.deepcopy(backend.processor)
    processor.image_processor.do_resize = False
    unresized = differentiable_preprocess(processor, "gemma4")
    image = noise(96, 48)
    real = processor.image_processor(images=[image], return_tensors="pt")
    assert torch.equal(unresized([image_to_tensor(image)])["pixel_values"], real["pixel_values"])
    assert real["num_soft_tokens_per_image"].tolist() == [2]
    assert unresized.geometry(96, 48).boxes.tolist() == [[0, 0, 48, 48], [48, 0, 96, 48]]


def test_a_pil_backed_gemma4_processor_is_refused() -> None:
    from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil

    processor = copy.deepcopy(create_backend("tiny:gemma4").processor)
    processor.image_processor = Gemma4ImageProcessorPil(max_soft_tokens=70)
    with pytest.raises(HarnessError, match="Gemma4ImageProcessorPil image processor is not torchvision-backed"):
        differentiable_preprocess(processor, "gemma4")


def test_gemma4_white_box_losses_and_diagnostics() -> None:
    """Through the hf: loading path: every loss has a pixel gradient, Vis-PGD's features are the pooled
    soft tokens, OAR sees the region, and layer restoration runs through the decoder whose last layer
    reuses the keys and values of the layer before it: the image states that layer and the one before
    it write reach no later token, so restoring them at depths 1 and 2 cannot change the answer."""
    from harness.protocols.fusion.attacks.diagnostics import layer_restoration, overlay_attention_ratio
    from harness.protocols.fusion.attacks.losses import WhiteBox
    from harness.tiny_models import tiny_model_path

    wb = WhiteBox(create_backend(f"hf:{tiny_model_path('gemma4')}", {"dtype": "float32"}))
    image = noise(96, 64)
    messages = ask(image)
    batch = wb.batch([messages], ["red"], ["blue"])
    clean_features = wb.image_features(wb.pixel_inputs([image_to_tensor(image)]))
    assert [tuple(f.shape) for f in clean_features] == [(60, 64)]  # 96 x 64 -> 480 x 288: 10 x 6 cells
    for loss in (wb.vis_loss(batch, clean_features), wb.end_loss(batch), wb.mantis_loss(batch)):
        x = [image_to_tensor(image).requires_grad_(True)]
        loss(x).sum().backward()
        assert x[0].grad is not None and x[0].grad.abs().sum() > 0
    value = overlay_attention_ratio(wb, messages, image.size, (0, 0, 48, 32))
    assert value is not None and value > 0
    clean, adversarial = ask(noise(96, 64, 1)), ask(noise(96, 64, 2))
    # "correct" = any answer but the unrestored adversarial one (the first decoded)
    answers: list[str] = []
    restored, depths = layer_restoration(wb, clean, adversarial, 4, lambda t: answers.append(t) or t != answers[0])
    assert len(answers) == 4 and answers[2] == answers[3] == answers[0]  # depths 1 and 2: the unrestored answer
    assert answers[1] != answers[0] and (restored, depths) == (True, [0])  # depth 0 changes it


def test_harness_attack_on_tiny_gemma4(fusion_dir: Path, tmp_path: Path) -> None:
    from tests.protocols.fusion.test_attacks import attack_end_to_end

    attack_end_to_end("gemma4", fusion_dir, tmp_path, limit=2)
