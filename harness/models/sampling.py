"""Batch-invariant sampling for transformers ``generate``: every request draws from its own generator.

``model.generate(do_sample=True)`` draws all rows of a batch from one global generator, so a request's
samples would depend on which requests share its batch. :func:`seeded_sampler` is a logits processor that
does the sampling step itself: it applies the warpers ``generate`` would apply when sampling (temperature,
top-k, top-p, ... resolved from the model's generation config exactly as ``generate`` resolves them), then
draws the ``n`` rows of each request from a ``torch.Generator`` seeded with that request's seed, and hands
``generate`` (run greedily) a distribution with all its mass on the drawn token.

A request alone in a batch therefore consumes the same random numbers as the former one-request call
(``torch.manual_seed(seed)``, then ``generate(do_sample=True, num_return_sequences=n)``), and its samples
are the same: response-store entries written by either stay valid. In a batch with other requests it
draws the same random numbers again; only left padding can change the model's probabilities, at the level
of floating-point rounding, and so flip a draw that falls on a near-tie between two tokens.
"""

from __future__ import annotations

from typing import Any

from harness.models.base import GenerationParams

# The sampling warpers of transformers' ``_get_logits_processor`` in its order: (config field, whether the value
# is active, warper class name, its keyword for the value). ``min_tokens_to_keep`` stays 1 (no beam search).
_WARPERS: tuple[tuple[str, Any, str, str], ...] = (
    ("temperature", lambda v: v != 1.0, "TemperatureLogitsWarper", "temperature"),
    ("top_h", lambda v: True, "TopHLogitsWarper", "top_h"),
    ("top_k", lambda v: v != 0, "TopKLogitsWarper", "top_k"),
    ("top_p", lambda v: v < 1.0, "TopPLogitsWarper", "top_p"),
    ("min_p", lambda v: True, "MinPLogitsWarper", "min_p"),
    ("typical_p", lambda v: v < 1.0, "TypicalLogitsWarper", "mass"),
    ("epsilon_cutoff", lambda v: 0.0 < v < 1.0, "EpsilonLogitsWarper", "epsilon"),
    ("eta_cutoff", lambda v: 0.0 < v < 1.0, "EtaLogitsWarper", "epsilon"),
)


def sampling_warpers(model: Any, params: GenerationParams) -> list[Any]:
    """The warpers ``model.generate`` would apply when sampling under ``params`` (unset settings taken from the
    model's generation config, then transformers' defaults, as ``generate`` takes them)."""
    import transformers.generation as generation

    settings: dict[str, Any] = {"do_sample": True, "temperature": params.temperature, "top_p": params.top_p}
    if params.top_k is not None:
        settings["top_k"] = params.top_k
    config, _ = model._prepare_generation_config(None, **settings)
    warpers = []
    for name, active, cls, keyword in _WARPERS:
        value = getattr(config, name, None)
        if value is not None and active(value):
            extra = {"device": model.device} if name == "eta_cutoff" else {}
            warpers.append(getattr(generation, cls)(**{keyword: value}, **extra))
    return warpers


class SeededSampler:
    """A logits processor that samples each request's rows from that request's own generator (rows
    ``i * n .. i * n + n - 1`` belong to request ``i``) and returns scores whose argmax is the drawn token."""

    def __init__(self, warpers: list[Any], seeds: list[int], n: int, device: Any) -> None:
        import torch

        self.warpers = warpers
        self.n = n
        self.generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """One sampling step: warp, then draw every request's rows from its generator."""
        import torch

        for warper in self.warpers:
            scores = warper(input_ids, scores)
        probs = torch.nn.functional.softmax(scores, dim=-1)
        drawn = torch.cat(
            [
                torch.multinomial(probs[i * self.n : (i + 1) * self.n], 1, generator=g)
                for i, g in enumerate(self.generators)
            ]
        )
        out = torch.full_like(scores, float("-inf"))
        return out.scatter_(1, drawn, 0.0)


def seeded_sampler(model: Any, params: GenerationParams, seeds: list[int], n: int) -> SeededSampler:
    """The sampling step for a batch of requests with these seeds, ``n`` rows each, on ``model``."""
    return SeededSampler(sampling_warpers(model, params), seeds, n, model.device)
