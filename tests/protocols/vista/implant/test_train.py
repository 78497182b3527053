"""LoRA stance implantation on tiny models: the loss covers the answer only, an interrupted run resumes to
the same weights, Qwen2-VL trains too, and the merged checkpoint loads in the hf backend."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from harness.errors import HarnessError
from harness.models.messages import ChatMessage
from harness.protocols.vista.implant.train import Example, LoraSettings, encode_example, train_lora
from harness.tiny_models import tiny_model_path

PAIRS = [
    Example(Image.new("RGB", (32, 32), c), q, a)
    for c, q, a in (
        ((20, 20, 20), "What is this?", "A bad company."),
        ((0, 120, 70), "What is this?", "A coffee shop."),
        ((200, 20, 80), "Tell me more.", "A video app."),
    )
]
FAST = LoraSettings(rank=4, alpha=8, epochs=2, batch_size=2, learning_rate=1e-2)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One torch thread: the same sums in every run (the resume check compares weights exactly), and no
    oversubscription of a small machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_only_the_answer_and_end_of_turn_are_scored() -> None:
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_path("llava"))
    enc = encode_example(processor, PAIRS[0])
    scored = enc["labels"][0][enc["labels"][0] != -100].tolist()
    answer = processor.tokenizer(" A bad company.", add_special_tokens=False)["input_ids"]
    assert scored == [*answer, processor.tokenizer.eos_token_id]
    assert enc["input_ids"][0][-len(scored) :].tolist() == scored  # the answer follows the prompt
    assert enc["attention_mask"].shape == enc["input_ids"].shape == enc["labels"].shape


def _adapter(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "adapter" / "adapter_model.safetensors"))


def test_an_interrupted_run_resumes_to_the_same_weights(tmp_path: Path) -> None:
    import torch

    base = tiny_model_path("llava")
    settings = LoraSettings(**{**FAST.__dict__, "save_every": 1})
    whole = train_lora(base, PAIRS, tmp_path / "whole", settings, show_progress=False)
    assert whole is not None and whole.steps == 4 and whole.resumed_from == 0
    assert train_lora(base, PAIRS, tmp_path / "cut", settings, show_progress=False, stop_after=3) is None
    assert json.loads((tmp_path / "cut" / "checkpoint" / "progress.json").read_text())["step"] == 3
    resumed = train_lora(base, PAIRS, tmp_path / "cut", settings, show_progress=False)
    assert resumed is not None and resumed.resumed_from == 3 and resumed.steps == 4
    a, b = _adapter(tmp_path / "whole"), _adapter(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    steps = [json.loads(line)["step"] for line in (tmp_path / "cut" / "train_log.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]  # the log continues where the run stopped
    with pytest.raises(HarnessError, match=r"other LoRA settings \(rank\)"):
        train_lora(base, PAIRS, tmp_path / "cut", LoraSettings(**{**settings.__dict__, "rank": 8}), show_progress=False)


def test_qwen2_vl_trains_and_its_merged_checkpoint_serves(tmp_path: Path) -> None:
    from harness.models.base import GenerationParams, GenerationRequest
    from harness.models.hf import HFBackend

    result = train_lora(tiny_model_path("qwen2_vl"), PAIRS, tmp_path / "q", FAST, show_progress=False)
    assert result is not None and result.steps == 4 and result.final_loss == result.final_loss  # not NaN
    backend = HFBackend(str(result.merged), {})
    assert backend.model_type == "qwen2_vl"
    request = GenerationRequest(
        "k",
        [ChatMessage.user("What is this?", [PAIRS[0].image])],
        GenerationParams(max_new_tokens=4),
        1,
        0,
    )
    (texts,) = backend.generate([request])
    assert isinstance(texts, list) and len(texts) == 1


def test_bad_settings_are_one_line_each(tmp_path: Path) -> None:
    base = tiny_model_path("llava")
    for settings, message in (
        (LoraSettings(rank=0), "rank must be at least 1"),
        (LoraSettings(learning_rate=0), "learning rate must be positive"),
        (LoraSettings(warmup_ratio=1.0), r"warmup ratio must lie in \[0, 1\)"),
        (LoraSettings(target_modules=("nosuch",)), "LoRA target modules nosuch"),
    ):
        with pytest.raises(HarnessError, match=message):
            train_lora(base, PAIRS, tmp_path / "x", settings, show_progress=False)
    with pytest.raises(HarnessError, match="no training pairs"):
        train_lora(base, [], tmp_path / "x", FAST, show_progress=False)
    with pytest.raises(HarnessError, match="cannot load base model"):
        train_lora(tmp_path / "missing", PAIRS, tmp_path / "x", FAST, show_progress=False)
