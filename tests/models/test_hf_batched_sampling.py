"""Sampled requests batch across docs and still sample what they sample alone (per-request generators)."""

from __future__ import annotations

import pytest
from PIL import Image

from harness.models import GenerationParams, GenerationRequest
from harness.models.base import finished_text
from harness.models.hf import HFBackend
from tests.models.test_hf_backend import NOISE, RED, ask, backend

SAMPLED = GenerationParams(max_new_tokens=8, temperature=0.9, top_p=0.95)
GREEN = Image.new("RGB", (42, 63), (20, 200, 40))


def request(key: str, text: str, image: Image.Image | None, seed: int, n: int = 3) -> GenerationRequest:
    return GenerationRequest(key, ask(text, image), SAMPLED, n=n, seed=seed)


def native(b: HFBackend, req: GenerationRequest) -> list[str]:
    """The one-request call the store's sampled entries were written by: the global seed, then transformers'
    own sampling of n return sequences."""
    import torch

    inputs = b.prepare_inputs([req.messages])
    torch.manual_seed(req.seed)
    with torch.inference_mode():
        out = b.model.generate(
            **inputs,
            do_sample=True,
            temperature=req.params.temperature,
            top_p=req.params.top_p,
            num_return_sequences=req.n,
            max_new_tokens=req.params.max_new_tokens,
            pad_token_id=b.tokenizer.pad_token_id,
        )
    texts = b.tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    return [finished_text(t, req.params.until) for t in texts]  # as every backend returns them


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_a_request_samples_the_same_alone_and_in_any_batch(arch: str) -> None:
    b = backend(arch)
    target = request("t", "what is it", RED, seed=11)
    alone = b.generate([target])[0]
    assert isinstance(alone, list) and len(alone) == 3 and len(set(alone)) > 1  # three distinct draws
    # neighbours with longer and shorter prompts (left padding), other images and other seeds, before and after
    others = [
        request("a", "describe every detail of the picture you are looking at now", NOISE, seed=5),
        request("b", "hi", GREEN, seed=99),
    ]
    for batch in ([others[0], target, others[1]], [target, others[1]], [others[1], others[0], target]):
        out = b.generate(batch)
        assert out[batch.index(target)] == alone
    # the neighbours, too, sample as they do alone
    out = b.generate([others[0], target, others[1]])
    assert out[0] == b.generate([others[0]])[0] and out[2] == b.generate([others[1]])[0]
    # and another seed draws other samples
    assert b.generate([request("t", "what is it", RED, seed=12)])[0] != alone


@pytest.mark.parametrize("arch", ["llava", "qwen2_vl"])
def test_alone_it_samples_what_the_store_holds_from_transformers_own_sampling(arch: str) -> None:
    b = backend(arch)
    req = request("t", "what is it", RED, seed=7, n=4)
    assert b.generate([req])[0] == native(b, req)


def test_text_only_requests_batch_and_keep_their_samples() -> None:
    b = backend("qwen3")
    reqs = [
        request("x", "say something", None, seed=1, n=2),
        request("y", "a much longer prompt to pad", None, seed=2, n=2),
    ]
    assert b.generate(reqs) == [b.generate([r])[0] for r in reqs]


def test_sampled_requests_group_by_settings_n_and_images() -> None:
    b = backend("llava")
    reqs = [
        request("a", "q", RED, 1),
        request("b", "q", RED, 2),
        request("c", "q", RED, 3, n=2),
        request("d", "q", None, 4),
        request("e", "q", RED, 5),
    ]
    batches = b.preferred_batch(reqs, 2)
    assert [[r.key for r in batch] for batch in batches] == [["a", "b"], ["c"], ["d"], ["e"]]
