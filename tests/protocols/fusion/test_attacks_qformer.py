"""FusionAudit white-box attacks on the Q-Former families (BLIP-2, InstructBLIP): the hf backend's plain
prompts, the differentiable preprocessing against the real processor, the vision-token geometry, OAR
through the Q-Former's cross-attention, layer restoration and ``harness attack`` on tiny models."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from PIL import Image

from harness.errors import HarnessError, UnsupportedRequestError
from harness.models.base import create_backend
from harness.models.loglikelihood import LoglikelihoodRequest
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.pixels import QuantisedResize, image_to_tensor
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess
from harness.protocols.fusion.metrics import oar
from tests.protocols.fusion.fixtures import noise

ARCHS = ["blip2", "instructblip"]


def _messages(image: Image.Image, text: str = "Q?") -> list[ChatMessage]:
    return [ChatMessage.user(text, [image])]


def test_plain_prompts_when_no_chat_template(caplog: pytest.LogCaptureFixture) -> None:
    # like the real checkpoints, the tiny models ship no chat template: the family's plain prompt is used
    with caplog.at_level(logging.INFO, logger="harness.models.hf"):
        blip2 = create_backend("tiny:blip2")
    assert "prompts use the plain prompt 'Question: {} Answer:'" in caplog.text
    assert blip2.processor.chat_template is None and blip2.tokenizer.chat_template is None
    image = noise(40, 30)
    assert blip2._render(_messages(image))[0] == "Question: Q? Answer:"
    answered = [*_messages(image), ChatMessage.of_text("assistant", "red")]
    assert blip2._render(answered, add_generation_prompt=False)[0] == "Question: Q? Answer: red"
    instruct = create_backend("tiny:instructblip")
    assert instruct._render(_messages(image, "Describe it."))[0] == "Describe it."
    # scoring a choice: one full pass over "Question: Q? Answer: red" (InstructBLIP's Q-Former reading "Q?")
    for backend in (blip2, instruct):
        scored = backend.loglikelihood([LoglikelihoodRequest("k", _messages(image), ("red",))])[0][0]
        prompt = backend.prepare_inputs([_messages(image)])
        full = backend.encode([backend._render(answered, add_generation_prompt=False)[0]], [[image]])
        full.update({k: v for k, v in prompt.items() if k.startswith("qformer_")})
        n = prompt["input_ids"].shape[1]
        with torch.no_grad():
            logp = torch.log_softmax(backend.model(**full).logits[0, n - 1 : -1], dim=-1)
        want = logp.gather(-1, full["input_ids"][0, n:, None]).sum()
        assert scored.tokens == full["input_ids"].shape[1] - n and scored.loglikelihood == pytest.approx(float(want))
    # the processor puts the query tokens first (4 in the tiny models), before the prompt's tokens
    inputs = blip2.prepare_inputs([_messages(image)])
    assert inputs["input_ids"][0, :4].tolist() == [blip2.model.config.image_token_id] * 4
    assert blip2.model.config.image_token_id not in inputs["input_ids"][0, 4:].tolist()
    # a tokenizer template is used before the plain prompt
    blip2.tokenizer.chat_template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    blip2.prompt_format = blip2._prompt_format()
    assert blip2._render(_messages(image))[0] == "<user>Q?"
    # no template and no plain prompt for the family: refused in one line
    blip2.tokenizer.chat_template = None
    blip2.model_type = "other"
    blip2.prompt_format = blip2._prompt_format()
    with pytest.raises(UnsupportedRequestError, match=r"no chat template .* no plain prompt format"):
        blip2._render(_messages(image))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_batch_does_not_change_a_prompt(arch: str) -> None:
    # the processor pads between the query tokens and the text; the backend moves that padding to the front
    # (and InstructBLIP's Q-Former text padding to the end), so a prompt's logits do not depend on its batch
    backend = create_backend(f"tiny:{arch}")
    short, long = _messages(noise(56, 56, 1), "what is it?"), _messages(noise(40, 30, 2), "which " * 12 + "?")
    alone, batch = backend.prepare_inputs([short]), backend.prepare_inputs([short, long])
    n = int(alone["input_ids"].shape[1])
    pads = int(batch["input_ids"].shape[1]) - n
    assert batch["attention_mask"][0].tolist() == [0] * pads + [1] * n
    assert batch["input_ids"][0, pads : pads + 4].tolist() == [backend.model.config.image_token_id] * 4
    if arch == "instructblip":
        assert batch["qformer_attention_mask"][0, : alone["qformer_input_ids"].shape[1]].all()
    with torch.no_grad():
        torch.testing.assert_close(
            backend.model(**batch).logits[0, -1], backend.model(**alone).logits[0, -1], rtol=1e-4, atol=1e-4
        )


@pytest.mark.parametrize("arch", ARCHS)
def test_differentiable_preprocessing_equals_the_processor(arch: str) -> None:
    backend = create_backend(f"tiny:{arch}")
    processor = backend.processor
    pre = differentiable_preprocess(processor, backend.model_type)
    # downscaled, kept (28 x 28 is the fixed size: the resize is the identity), upscaled, odd aspect ratios
    for seed, (width, height) in enumerate([(100, 70), (28, 28), (13, 41), (161, 113)]):
        image = noise(width, height, seed)
        x = image_to_tensor(image).requires_grad_(True)
        mine = pre([x])["pixel_values"]
        assert torch.equal(mine, processor.image_processor(images=[image], return_tensors="pt")["pixel_values"])
        (mine * torch.linspace(-1, 1, mine.numel()).view_as(mine)).sum().backward()
        assert x.grad is not None and x.grad.abs().sum() > 0
        # the straight-through gradient is autograd's through the processor's float resize of the raw pixels
        raw = x.detach()[None].requires_grad_(True)
        weights = torch.randn((1, 3, 28, 28), generator=torch.Generator().manual_seed(seed))
        (want,) = torch.autograd.grad((pre._resize(raw * 255) * weights).sum(), raw)
        (got,) = torch.autograd.grad((QuantisedResize.apply(raw, pre._resize, pre.adjoint) * weights).sum(), raw)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
    mixed = [noise(w, h, 7 + k) for k, (w, h) in enumerate([(50, 30), (28, 28), (50, 30), (9, 60)])]
    real = processor.image_processor(images=mixed, return_tensors="pt")["pixel_values"]
    assert torch.equal(pre([image_to_tensor(im) for im in mixed])["pixel_values"], real)


def test_refused_processor_options() -> None:
    processor = create_backend("tiny:blip2").processor
    processor.image_processor.do_center_crop = True
    with pytest.raises(HarnessError, match="without do_center_crop"):
        differentiable_preprocess(processor, "blip-2")


@pytest.mark.parametrize("arch", ARCHS)
def test_geometry_and_oar_through_the_q_former(arch: str) -> None:
    from harness.protocols.fusion.attacks.diagnostics import overlay_attention_ratio
    from harness.protocols.fusion.attacks.losses import WhiteBox
    from harness.protocols.fusion.attacks.qformer import query_cross_attention

    wb = WhiteBox(create_backend(f"tiny:{arch}"))
    # a 56 x 28 image squashed to 28 x 28: the class token (no footprint), then 2 x 2 patches of 14 -> 28 x 14
    geometry = wb.pre.geometry(56, 28)
    assert geometry.boxes.tolist() == [[0, 0, 0, 0], [0, 0, 28, 14], [28, 0, 56, 14], [0, 14, 28, 28], [28, 14, 56, 28]]
    coverage, areas = geometry.coverage((0, 0, 28, 14))
    assert coverage.tolist() == [0, 1, 0, 0, 0] and areas.tolist() == [0, 392, 392, 392, 392]
    # query k's attention goes to the vision tokens in proportion to its cross-attention: by hand, queries
    # reading (CLS, p00, p01, p10, p11) with attention a = (0.4, 0.3, 0.2, 0.1) give p00 0.4 + 0.15 = 0.55,
    # p01 0.15, p10 0, p11 0.1 + 0.1 = 0.2 (the class token's 0.1 is left out):
    # OAR = (0.55 / 0.9) / (1 / 4) = 22 / 9
    mixing = torch.tensor([[0, 1, 0, 0, 0], [0, 0.5, 0.5, 0, 0], [0.5, 0, 0, 0, 0.5], [0, 0, 0, 0, 1.0]])
    on_patches = torch.tensor([0.4, 0.3, 0.2, 0.1]) @ mixing
    assert oar(on_patches.numpy(), coverage, areas) == pytest.approx(22 / 9)
    # the tiny model: one image -> 4 query tokens in the prompt, each reading the 5 vision tokens
    image = noise(56, 28)
    inputs = wb.backend.prepare_inputs([_messages(image)])
    n_queries = int((inputs["input_ids"][0] == wb.model.config.image_token_id).sum())
    wb.model.set_attn_implementation("eager")
    weights = query_cross_attention(wb.model, inputs)
    assert n_queries == 4 and tuple(weights.shape) == (1, 4, len(geometry.boxes))
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 4))
    # the hooks read what the Q-Former itself records as its cross-attentions
    with torch.no_grad():
        image_embeds = wb.model.vision_model(inputs["pixel_values"]).last_hidden_state
        text = (
            {
                "input_ids": inputs["qformer_input_ids"],
                "attention_mask": torch.cat(
                    [torch.ones(1, 4, dtype=torch.long), inputs["qformer_attention_mask"]], dim=1
                ),
            }
            if arch != "blip2"
            else {}
        )
        recorded = wb.model.qformer(
            query_embeds=wb.model.query_tokens, encoder_hidden_states=image_embeds, output_attentions=True, **text
        ).cross_attentions
    torch.testing.assert_close(weights, torch.stack([r.mean(dim=1) for r in recorded]).mean(dim=0))
    value = overlay_attention_ratio(wb, _messages(image), image.size, (0, 0, 28, 14))
    assert value is not None and value > 0


@pytest.mark.parametrize("arch", ARCHS)
def test_losses_and_layer_restoration(arch: str) -> None:
    from harness.protocols.fusion.attacks.diagnostics import layer_restoration
    from harness.protocols.fusion.attacks.losses import WhiteBox

    wb = WhiteBox(create_backend(f"tiny:{arch}"))
    image = noise(64, 48)
    batch = wb.batch([_messages(image)], ["red"], ["blue"])
    for name in ("end_loss", "mantis_loss"):
        x = [image_to_tensor(image).requires_grad_(True)]
        getattr(wb, name)(batch)(x).sum().backward()
        assert x[0].grad is not None and x[0].grad.abs().sum() > 0
    # Vis-PGD's features: the projected query outputs the language model receives (4 tokens of width 64)
    clean = [f.detach() for f in wb.image_features(wb.pixel_inputs([image_to_tensor(image)]), batch)]
    assert [tuple(f.shape) for f in clean] == [(4, 64)]
    assert float(wb.vis_loss(batch, clean)([image_to_tensor(image)])[0]) == pytest.approx(-1.0)
    assert float(wb.vis_loss(batch, clean)([image_to_tensor(noise(64, 48, 1))])[0]) > -1.0
    # restoration swaps the query positions (the first 4) at each of the 2 decoder layers
    clean_msgs, adversarial = _messages(noise(56, 56, 1)), _messages(noise(56, 56, 2))
    assert layer_restoration(wb, clean_msgs, adversarial, 3, lambda text: True) == (None, [])
    assert layer_restoration(wb, clean_msgs, adversarial, 3, lambda text: False) == (False, [])
    calls: list[str] = []
    restored, depths = layer_restoration(
        wb, clean_msgs, adversarial, 3, lambda text: calls.append(text) or len(calls) > 1
    )
    assert restored and depths == [0, 1] and len(calls) == 3


@pytest.mark.parametrize("arch", ARCHS)
def test_harness_attack_on_tiny_q_former_models(arch: str, fusion_dir: Path, tmp_path: Path) -> None:
    """``harness attack`` end to end with the single-view families' checks: every attack re-checked, OAR of
    the Typo-Evid and clean images (through the Q-Former) positive, restoration on the End-PGD flips, and a
    saved clean run reused."""
    from tests.protocols.fusion import test_attacks

    test_attacks.attack_end_to_end(arch, fusion_dir, tmp_path)
