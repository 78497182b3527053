"""The hf backend on tiny random-weight models of real architectures (built offline, loaded by path)."""

from __future__ import annotations

from functools import cache

import pytest
from PIL import Image

from harness.errors import ModelSpecError
from harness.models import GenerationParams, GenerationRequest, create_backend
from harness.models.hf import HFBackend
from harness.models.messages import ChatMessage

VLM_ARCHES = ["qwen2_vl", "qwen2_5_vl", "llava", "llava_next", "gemma3", "gemma4", "idefics3"]


@cache
def backend(arch: str) -> HFBackend:
    return create_backend(f"tiny:{arch}", {"dtype": "float32"})  # type: ignore[return-value]


def ask(text: str, image: Image.Image | None) -> list[ChatMessage]:
    return [ChatMessage.user(text, [image] if image is not None else [])]


RED = Image.new("RGB", (56, 56), (230, 20, 20))
NOISE = Image.effect_noise((70, 42), 90).convert("RGB")


@pytest.mark.parametrize("arch", VLM_ARCHES)
def test_batched_greedy_equals_one_by_one_and_images_matter(arch: str) -> None:
    b = backend(arch)
    assert b.is_multimodal and b.is_smoke_model and b.device == "cpu"
    greedy = GenerationParams(max_new_tokens=6)
    reqs = [
        GenerationRequest("a", ask("what color is this", RED), greedy),
        GenerationRequest("b", ask("describe the picture", NOISE), greedy, n=2),
    ]
    batched = b.generate(reqs)
    single = [b.generate([r])[0] for r in reqs]
    assert batched == single
    assert len(batched[1]) == 2 and batched[1][0] == batched[1][1]  # greedy: all n identical
    import torch

    with torch.no_grad():
        logits = [b.model(**b.prepare_inputs([ask("what", img)])).logits[0, -1] for img in (RED, NOISE)]
    assert not torch.allclose(logits[0], logits[1])


@pytest.mark.parametrize("arch", ["qwen2_vl", "gemma3"])
def test_native_n_sampling_is_reproducible_per_seed(arch: str) -> None:
    b = backend(arch)
    params = GenerationParams(max_new_tokens=8, temperature=1.0)
    req = GenerationRequest("s", ask("what is it", RED), params, n=4, seed=7)
    first = b.generate([req])[0]
    assert isinstance(first, list) and len(first) == 4
    assert len(set(first)) > 1  # four distinct draws in one call
    assert b.generate([req])[0] == first
    other = b.generate([GenerationRequest("s", ask("what is it", RED), params, n=4, seed=8)])[0]
    assert other != first


def test_text_only_model_answers_text_and_refuses_images() -> None:
    b = backend("qwen3")
    assert not b.is_multimodal
    out = b.generate([GenerationRequest("t", ask("say yes", None), GenerationParams(max_new_tokens=5))])[0]
    assert isinstance(out, list) and isinstance(out[0], str)
    err = b.generate([GenerationRequest("i", ask("what", RED), GenerationParams(max_new_tokens=5))])[0]
    assert isinstance(err, Exception) and "text-only model" in str(err)


def test_stop_strings_cut_the_completion() -> None:
    b = backend("llava")
    free = b.generate([GenerationRequest("f", ask("hi", RED), GenerationParams(max_new_tokens=12))])[0][0]
    stop = free[3:5]
    assert stop.strip(), "the tiny model's output should have characters to stop at"
    cut = b.generate([GenerationRequest("c", ask("hi", RED), GenerationParams(max_new_tokens=12, until=(stop,)))])
    assert cut[0][0] == free[: free.find(stop)]


def test_an_answer_cut_off_mid_character_ends_before_it() -> None:
    """Greedy answers of growing length: where the last token holds only the first bytes of a character,
    the tokenizer decodes a trailing U+FFFD, and the backend returns the text without it (vLLM's text for
    the same tokens; harness.models.base.finished_text)."""
    import torch

    b = backend("qwen3")
    messages = ask("what color is the sky", None)
    inputs = b.prepare_inputs([messages])
    with torch.inference_mode():
        ids = b.model.generate(**inputs, max_new_tokens=24, do_sample=False)[0, inputs["input_ids"].shape[1] :]
    raw = [b.tokenizer.decode(ids[:k], skip_special_tokens=True) for k in range(1, len(ids) + 1)]
    cut = [k for k, text in enumerate(raw, start=1) if text.endswith("\ufffd")]
    assert cut, "the tiny model's greedy answer should cut a multi-byte character somewhere"
    answer = b.generate([GenerationRequest("c", messages, GenerationParams(max_new_tokens=cut[0]))])[0][0]
    assert answer == raw[cut[0] - 1].rstrip("\ufffd") and answer != raw[cut[0] - 1]
    # cut_characters=keep (what --lmms-model sets): lmms-eval's text, a separate store identity
    kept = create_backend("tiny:qwen3", {"dtype": "float32", "cut_characters": "keep"})
    request = GenerationRequest("c", messages, GenerationParams(max_new_tokens=cut[0]))
    assert kept.generate([request])[0][0] == raw[cut[0] - 1]
    assert kept.fingerprint != b.fingerprint
    with pytest.raises(ModelSpecError, match="cut_characters='maybe': choose drop or keep"):
        create_backend("tiny:qwen3", {"cut_characters": "maybe"})


def test_lmms_model_keeps_cut_characters_of_transformers_models_only() -> None:
    from harness.cli.eval import lmms_model_args

    assert lmms_model_args("tiny:llava", {}, "llava_hf") == {"cut_characters": "keep"}
    assert lmms_model_args("hf:/m", {"cut_characters": "drop"}, "llava_hf") == {"cut_characters": "drop"}
    assert lmms_model_args("hf:/m", {"dtype": "float32"}, None) == {"dtype": "float32"}
    assert lmms_model_args("vllm:/m", {}, "llava_hf") == {}


def test_info_and_fingerprint_identify_the_model() -> None:
    b = backend("qwen2_vl")
    info = b.info()
    assert info["smoke_test_model"] is True and info["model_type"] == "qwen2_vl"
    assert info["model_family"] == "qwen2_vl" and len(b.fingerprint) == 16
    assert backend("llava").fingerprint != b.fingerprint


def test_pixel_bounds_reach_the_processor_and_the_fingerprint() -> None:
    bounded = create_backend("tiny:qwen2_vl", {"dtype": "float32", "max_pixels": str(224 * 224)})
    image = Image.new("RGB", (224, 224), (10, 200, 30))
    grids = {
        b: b.processor.image_processor(images=[image], return_tensors="pt")["image_grid_thw"].tolist()
        for b in (backend("qwen2_vl"), bounded)
    }
    assert grids[bounded] == [[1, 16, 16]]  # 224 px at 14 px a patch: the image keeps its size
    assert grids[backend("qwen2_vl")] == [[1, 8, 8]]  # the tiny default caps it at 112 x 112
    assert bounded.info()["max_pixels"] == 224 * 224 and bounded.fingerprint != backend("qwen2_vl").fingerprint


def test_bad_model_args_and_missing_model_fail_in_one_line(tmp_path) -> None:
    with pytest.raises(ModelSpecError, match="unknown key\\(s\\) colour"):
        create_backend("tiny:llava", {"colour": "red"})
    with pytest.raises(ModelSpecError, match="dtype='float8'"):
        create_backend("tiny:llava", {"dtype": "float8"})
    with pytest.raises(ModelSpecError, match="max_pixels='lots'"):
        create_backend("tiny:qwen2_vl", {"max_pixels": "lots"})
    with pytest.raises(ModelSpecError, match="apply to qwen2_5_vl, qwen2_vl processors, not llava"):
        create_backend("tiny:llava", {"min_pixels": "3136"})
    with pytest.raises(ModelSpecError, match=r"cannot load model .*offline"):
        create_backend("hf:no-such-org/no-such-model-xyz")
    with pytest.raises(ModelSpecError, match="cannot load model"):
        create_backend(f"hf:{tmp_path}")


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("banana", "device='banana': not a device; choose auto, cpu, cuda, cuda:N, mps, xpu or xpu:N"),
        ("cuda:7", "device='cuda:7': .*(no cuda device|has cuda devices 0)"),
        ("meta", "device='meta': not a device"),
    ],
)
def test_unusable_device_fails_in_one_line_before_loading(device: str, message: str) -> None:
    with pytest.raises(ModelSpecError, match=message):
        create_backend("tiny:qwen3", {"device": device})


def test_cpu_device_is_accepted() -> None:
    assert create_backend("tiny:qwen3", {"device": "cpu"}).info()["device"] == "cpu"
