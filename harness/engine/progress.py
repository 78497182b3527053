"""What a progress bar says of the work it counts, so a slow step names itself and its size before its
first update (a bar at 0 of 20 for minutes, with no word, looks stuck)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.models.base import GenerationRequest


def generation_label(step: str, requests: Sequence[GenerationRequest]) -> str:
    """``step`` with the prompts, samples and answer length left to generate: ``generate: 2 prompts x 10
    samples, up to 1,000 tokens each``. The bar's own estimate of the time left follows its first update."""
    if not requests:
        return step
    samples = {r.n for r in requests}
    n = samples.pop() if len(samples) == 1 else None
    per_prompt = "" if n == 1 else f" x {n} samples" if n else f", {sum(r.n for r in requests)} samples"
    longest = max(r.params.max_new_tokens for r in requests)
    prompts = f"{len(requests)} prompt{'s' if len(requests) > 1 else ''}"
    return f"{step}: {prompts}{per_prompt}, up to {longest:,} tokens each"
