"""White-box diagnostics of FusionAudit: overlay attention ratio (OAR) and layer restoration.

- **OAR** of a Typo-Evid image: the attention from the text tokens after the image (the question and
  the chat template up to the answer) to the image tokens, averaged over heads, the late decoder
  layers (the last half by default) and those query tokens; the overlay region's share of it divided
  by the region's share of the image area (:func:`harness.protocols.fusion.metrics.oar`). Needs eager attention
  (sdpa returns no attention weights); the model is switched to eager for the measurement. Qwen3.5's
  linear-attention layers have no attention weights, so its late half is that of its full-attention
  layers (the only ones transformers returns). Token
  footprints come from the processor geometry (the Qwen family's resized grid of merged patches, Gemma 3's
  pooled grid over the squashed image, Gemma 4's pooled cells over its aspect-preserving resize, LLaVA's
  center crop, LLaVA-NeXT's base view then its unpadded tile grid with an empty box per row-end newline
  token, Idefics3 / SmolVLM's tiles then global view, where a region is seen twice, DeepSeek-VL's grid over
  its padded square, a cell over the padding clipped to the image or empty); a region part the
  model never sees
  (cropped away) does not count, and OAR is None when the whole region lies outside the model's view.
  BLIP-2 and InstructBLIP's query tokens have no footprint: their attention is passed on to the vision
  encoder's patches through the Q-Former's cross-attention (:mod:`harness.protocols.fusion.attacks.qformer`).
- **Layer restoration** of an End-PGD flip (the paper's pixel-pathway diagnostic): at one decoder depth
  ``l``, the decoder's visual-prefix hidden states (the image positions; the paper's L2 backbone
  "processes a fixed visual prefix") of the adversarial run are replaced by the clean run's (prompt
  pass only), and the answer is decoded greedily; the flip is recovered if any depth gives an answer J
  judges correct. Subset (the paper's): per model the first ``RESTORATION_ITEMS`` = 40 End-PGD flips by
  item id, of which those whose saved adversarial image still flips under the greedy decode (the paper
  keeps 24-40 per model) are counted; the others return None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.losses import WhiteBox
from harness.protocols.fusion.metrics import oar

RESTORATION_ITEMS = 40


def _image_positions(model: Any, input_ids: Any) -> Any:
    token = getattr(model.config, "image_token_id", None)
    if token is None:
        token = model.config.image_token_index
    return (input_ids[0] == token).nonzero().flatten()


def _layers(model: Any) -> Any:
    decoder = model.get_decoder()  # BLIP-2's is its language model, whose own decoder holds the layers
    return decoder.layers if hasattr(decoder, "layers") else decoder.get_decoder().layers


def _ensure_eager(model: Any) -> None:
    if getattr(model.config, "_attn_implementation", None) != "eager":
        model.set_attn_implementation("eager")


def overlay_attention_ratio(
    wb: WhiteBox,
    messages: list[ChatMessage],
    image_size: tuple[int, int],
    region: tuple[float, float, float, float],
    late_fraction: float = 0.5,
) -> float | None:
    """OAR of one image (``image_size`` = (width, height) of the image in ``messages``)."""
    import torch

    model = wb.model
    _ensure_eager(model)
    inputs = wb.backend.prepare_inputs([messages])
    with torch.no_grad():
        out = model(**inputs, output_attentions=True, use_cache=False)
    attentions = getattr(out, "language_model_outputs", out).attentions  # BLIP-2 nests its language model's
    image_pos = _image_positions(model, inputs["input_ids"])
    queries = torch.arange(int(image_pos.max()) + 1, inputs["input_ids"].shape[1], device=image_pos.device)
    keep = max(1, round(len(attentions) * late_fraction))
    late = torch.stack([a[0].float() for a in attentions[-keep:]])  # (layers, heads, T, T)
    per_token = late[:, :, queries][:, :, :, image_pos].mean(dim=(0, 1, 2))  # (image tokens,)
    spread = getattr(wb.pre, "spread", None)
    if spread is not None:  # Q-Former query tokens pass their attention on to the vision tokens they read
        per_token = spread(model, inputs, per_token)
    coverage, areas = wb.pre.geometry(*image_size).coverage(region)
    if len(coverage) != per_token.shape[0]:
        return None
    return oar(per_token.cpu().numpy(), coverage, areas)


def layer_restoration(
    wb: WhiteBox,
    clean: list[ChatMessage],
    adversarial: list[ChatMessage],
    max_new_tokens: int,
    is_correct: Callable[[str], bool],
) -> tuple[bool | None, list[int]]:
    """Whether restoring the clean image states at some depth undoes the flip, and the depths that do;
    None when the flip does not reproduce (the unrestored greedy answer is already correct)."""
    model = wb.model
    layers = _layers(model)
    clean_inputs = wb.backend.prepare_inputs([clean])
    adv_inputs = wb.backend.prepare_inputs([adversarial])
    pos = _image_positions(model, adv_inputs["input_ids"])
    prompt_len = adv_inputs["input_ids"].shape[1]
    saved = _image_states(model, layers, clean_inputs, pos)
    if is_correct(_greedy_answer(wb, adv_inputs, max_new_tokens)):
        return None, []
    recovered = []
    for depth, layer in enumerate(layers):
        handle = layer.register_forward_hook(_restoring_hook(saved[depth], pos, prompt_len))
        try:
            text = _greedy_answer(wb, adv_inputs, max_new_tokens)
        finally:
            handle.remove()
        if is_correct(text):
            recovered.append(depth)
    return bool(recovered), recovered


def _image_states(model: Any, layers: Any, inputs: Any, pos: Any) -> dict[int, Any]:
    """Depth -> the hidden states at the image positions of one forward pass over ``inputs``."""
    import torch

    saved: dict[int, Any] = {}

    def capture(depth: int) -> Callable[..., None]:
        def hook(_module: Any, _args: Any, output: Any) -> None:
            hidden = output[0] if isinstance(output, tuple) else output
            saved[depth] = hidden[:, pos].detach().clone()

        return hook

    handles = [layer.register_forward_hook(capture(d)) for d, layer in enumerate(layers)]
    try:
        with torch.no_grad():
            model(**inputs, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    return saved


def _restoring_hook(state: Any, pos: Any, prompt_len: int) -> Callable[..., Any]:
    """A forward hook that writes ``state`` over a layer's image positions on the prompt pass (the decoding
    steps, one token long, pass through)."""

    def restore(_module: Any, _args: Any, output: Any) -> Any:
        hidden = output[0] if isinstance(output, tuple) else output
        if hidden.shape[1] != prompt_len:
            return output
        hidden = hidden.clone()
        hidden[:, pos] = state.to(hidden.dtype)
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    return restore


def _greedy_answer(wb: WhiteBox, inputs: Any, max_new_tokens: int) -> str:
    """The model's greedy answer to ``inputs``, prompt cut off."""
    import torch

    prompt_len = inputs["input_ids"].shape[1]
    with torch.no_grad():
        out = wb.model.generate(
            **inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=wb.tokenizer.pad_token_id
        )
    return str(wb.tokenizer.decode(out[0, prompt_len:], skip_special_tokens=True))
