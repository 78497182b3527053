"""The three pixel-pathway losses of FusionAudit, each to be maximised by PGD, on a frozen ``hf`` model.

- **Vis-PGD**: ``-cos(f(x), f(x0))``, the negated cosine similarity between the vision encoder's
  features (the projected image tokens the language model receives) of the perturbed and the clean
  image, averaged over image tokens.
- **End-PGD**: the cross-entropy of the teacher-forced full correct answer (its tokens and the end
  token), averaged over those tokens.
- **MANTIS**: the correct continuation ``c`` and the deterministic wrong continuation ``w`` are fixed
  before optimising; at their first diverging token ``i`` only (after the shared prefix
  ``c[:i] = w[:i]``), ``log p(w_i) - log p(c_i)``: raise the wrong token, lower the correct one.

The correct continuation is the model's own clean greedy answer (judged correct by J), tokenised
with the end token appended; the wrong continuation is the item's wrong answer with the end token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.models.base import Backend, WhiteBoxBackend
from harness.models.messages import ChatMessage
from harness.protocols.fusion.attacks.preprocess import differentiable_preprocess


def white_box(backend: Backend, spec: str) -> WhiteBoxBackend:
    """``backend`` as a white-box model the attacks support, or one line saying why it is not one."""
    from harness.protocols.fusion.attacks.preprocess import SUPPORTED, unsupported_message

    kind = backend.model_type if isinstance(backend, WhiteBoxBackend) else type(backend).__name__
    if not isinstance(backend, WhiteBoxBackend) or backend.model_type not in SUPPORTED:
        raise HarnessError(f"{spec}: {unsupported_message(str(kind))}")
    return backend


def first_divergence(correct: list[int], wrong: list[int]) -> int:
    """Index of the first token where the two continuations differ (a proper prefix diverges where it
    ends: its end token against the longer one's next token); identical continuations are refused."""
    for i, (a, b) in enumerate(zip(correct, wrong, strict=False)):
        if a != b:
            return i
    if len(correct) == len(wrong):
        raise HarnessError("MANTIS: the correct and the wrong continuation are identical")
    return min(len(correct), len(wrong))


@dataclass
class Batch:
    """Prompt inputs of a batch (built from the clean images by the real processor) and its texts."""

    inputs: dict[str, Any]
    correct: list[list[int]]
    wrong: list[list[int]]


class WhiteBox:
    """A frozen ``hf`` backend with a differentiable path from raw pixels to its outputs."""

    def __init__(self, backend: WhiteBoxBackend) -> None:
        if not backend.is_multimodal:
            raise HarnessError("white-box attacks need an image-text-to-text model on the hf backend")
        self.backend = backend
        self.model = backend.model
        self.tokenizer = backend.tokenizer
        for p in self.model.parameters():
            p.requires_grad_(False)
        dtype = next(self.model.parameters()).dtype
        self.pre = differentiable_preprocess(backend.processor, backend.model_type, dtype=dtype)
        eos = self.model.generation_config.eos_token_id
        self.eos = int(eos[0] if isinstance(eos, list) else eos if eos is not None else self.tokenizer.eos_token_id)
        self.device = self.model.device

    def tokens(self, text: str) -> list[int]:
        """A continuation's token ids: the stripped text without special tokens, then the end token."""
        return [*self.tokenizer(text.strip(), add_special_tokens=False)["input_ids"], self.eos]

    def batch(self, messages: list[list[ChatMessage]], correct: list[str], wrong: list[str]) -> Batch:
        """The prompt inputs of the messages (the backend's own processor) with the correct and wrong
        continuations tokenised."""
        inputs = dict(self.backend.prepare_inputs(messages))
        return Batch(inputs, [self.tokens(c) for c in correct], [self.tokens(w) for w in wrong])

    def pixel_inputs(self, images: list[Any]) -> dict[str, Any]:
        """The model's pixel inputs from raw image tensors, through the differentiable preprocessing."""
        return self.pre([x.to(self.device) for x in images])

    def image_features(self, pixels: dict[str, Any], batch: Batch | None = None) -> list[Any]:
        """The projected image features the language model receives, one entry per image (InstructBLIP's
        Q-Former also reads the instruction: its text inputs come from the prompt ``batch``)."""
        kwargs = {k: v for k, v in pixels.items() if k != "pixel_values"}
        if batch is not None:
            kwargs.update({k: v for k, v in batch.inputs.items() if k.startswith("qformer_")})
        # DeepSeek-VL's generation classes leave get_image_features to their base model
        encoder = self.model if hasattr(self.model, "get_image_features") else self.model.model
        out = encoder.get_image_features(pixels["pixel_values"], **kwargs)
        feats = out.pooler_output if hasattr(out, "pooler_output") else out
        return list(feats)

    def _extended(self, inputs: dict[str, Any], continuations: list[list[int]]) -> dict[str, Any]:
        """The prompt batch with each item's continuation appended (right-padded, masked)."""
        import torch

        width = max((len(c) for c in continuations), default=0)
        if width == 0:
            return inputs
        ids = inputs["input_ids"]
        pad = self.tokenizer.pad_token_id or 0
        ext = torch.full((ids.shape[0], width), pad, dtype=ids.dtype, device=ids.device)
        mask = torch.zeros((ids.shape[0], width), dtype=inputs["attention_mask"].dtype, device=ids.device)
        for b, cont in enumerate(continuations):
            if cont:
                ext[b, : len(cont)] = torch.tensor(cont, dtype=ids.dtype, device=ids.device)
                mask[b, : len(cont)] = 1
        out = dict(inputs)
        out["input_ids"] = torch.cat([ids, ext], dim=1)
        out["attention_mask"] = torch.cat([inputs["attention_mask"], mask], dim=1)
        for key in ("mm_token_type_ids", "token_type_ids"):
            if key in inputs:
                out[key] = torch.cat([inputs[key], torch.zeros_like(ext)], dim=1)
        return out

    def logits(self, batch: Batch, images: list[Any], continuations: list[list[int]]) -> Any:
        """The model's logits on the prompt with each item's continuation appended, for these images."""
        inputs = self._extended(batch.inputs, continuations)
        inputs.update(self.pixel_inputs(images))
        return self.model(**inputs, use_cache=False).logits

    # -- losses (per item, to maximise) -----------------------------------------------------------
    def vis_loss(self, batch: Batch, clean_features: list[Any]) -> Any:
        """The Vis-PGD loss: per item, minus the cosine between the perturbed and clean image features,
        averaged over image tokens (module docstring)."""
        import torch
        import torch.nn.functional as F

        def loss(images: list[Any]) -> Any:
            feats = self.image_features(self.pixel_inputs(images), batch)
            return torch.stack(
                [
                    -F.cosine_similarity(f.float(), c.float(), dim=-1).mean()
                    for f, c in zip(feats, clean_features, strict=True)
                ]
            )

        return loss

    def end_loss(self, batch: Batch) -> Any:
        """The End-PGD loss: per item, the teacher-forced cross-entropy of the full correct answer, averaged
        over its tokens (module docstring)."""
        import torch

        prompt_len = batch.inputs["input_ids"].shape[1]

        def loss(images: list[Any]) -> Any:
            logp = torch.log_softmax(self.logits(batch, images, batch.correct).float(), dim=-1)
            out = []
            for b, cont in enumerate(batch.correct):
                pos = torch.arange(prompt_len - 1, prompt_len - 1 + len(cont), device=logp.device)
                target = torch.tensor(cont, device=logp.device)
                out.append(-logp[b, pos, target].mean())
            return torch.stack(out)

        return loss

    def mantis_loss(self, batch: Batch) -> Any:
        """The MANTIS loss: per item, log p(w_i) - log p(c_i) at the first token where the correct and wrong
        continuations diverge, after their shared prefix (module docstring)."""
        import torch

        prompt_len = batch.inputs["input_ids"].shape[1]
        split = [first_divergence(c, w) for c, w in zip(batch.correct, batch.wrong, strict=True)]
        prefixes = [c[:i] for c, i in zip(batch.correct, split, strict=True)]
        pairs = [
            (w[i] if i < len(w) else self.eos, c[i] if i < len(c) else self.eos)
            for c, w, i in zip(batch.correct, batch.wrong, split, strict=True)
        ]

        def loss(images: list[Any]) -> Any:
            logp = torch.log_softmax(self.logits(batch, images, prefixes).float(), dim=-1)
            return torch.stack(
                [
                    logp[b, prompt_len - 1 + i, w] - logp[b, prompt_len - 1 + i, c]
                    for b, (i, (w, c)) in enumerate(zip(split, pairs, strict=True))
                ]
            )

        return loss
