"""Run in the vLLM environment (``VLLM_PYTHON -m tests.vllm_probe OUT``) by tests/models/test_vllm_backend.py: what
vLLM's own classes make of the harness's translation of requests, saved to OUT/probe.pt for the test to
compare with the hf backend (another transformers version, in the main environment).

vLLM's renderer applies the chat template, parses the image parts and runs the model's multi-modal
processor exactly as ``LLM.chat`` does before scheduling; here it runs without an engine, on the tiny models
of every head size (the real engine, tests/models/test_vllm_engine.py, needs head_dim 32 on CPU).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from vllm import SamplingParams
from vllm.config import DeviceConfig, ModelConfig, VllmConfig
from vllm.renderers.params import ChatParams
from vllm.renderers.registry import renderer_from_config

from harness.models.messages import ChatMessage
from harness.models.vllm import VLLMSettings, sampling_kwargs, to_vllm_messages
from harness.tiny_models import tiny_model_path
from tests.models.test_vllm_backend import ARCHS, conversation, requests

SAMPLING_FIELDS = ("n", "seed", "temperature", "top_p", "top_k", "max_tokens", "stop")


def renderer(arch: str) -> Any:
    """vLLM's renderer of the tiny model, as ``LLM`` builds it for ``--model-args dtype=float32``."""
    settings = VLLMSettings.from_model_args({"dtype": "float32", "limit_mm_per_prompt": "1"})
    kwargs = settings.engine_kwargs()
    # The engine rescales and normalises pixels on the GPU by default (a uint8 tensor leaves the processor);
    # here the processor does it, to compare the pixels with hf's. Without the engine behind it, the
    # renderer's cache of processed images is off (a cached image comes back as None, for the engine's copy).
    model_config = ModelConfig(
        model=str(tiny_model_path(arch)),
        dtype=kwargs["dtype"],
        limit_mm_per_prompt=kwargs["limit_mm_per_prompt"],
        mm_device_do_normalize=False,
        mm_processor_cache_gb=0,
    )
    return renderer_from_config(VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu")))


def render(renderer: Any, messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> dict[str, Any]:
    """The engine input ``LLM.chat`` makes of one conversation (``LLM._preprocess_chat`` with its defaults)."""
    params = ChatParams(
        chat_template=None,
        chat_template_content_format="auto",
        chat_template_kwargs={
            "add_generation_prompt": add_generation_prompt,
            "continue_final_message": False,
            "tools": None,
            "tokenize": False,
        },
    )
    tokens = renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
    _, (engine_input,) = renderer.render_chat([messages], params, tokens)
    return engine_input


def rendered(arch: str) -> dict[str, Any]:
    """The token ids and pixel values vLLM's renderer makes of the test conversation, as ``LLM.chat`` would."""
    engine_input = render(renderer(arch), to_vllm_messages(conversation()))
    (image,) = engine_input["mm_kwargs"]["image"]
    return {"input_ids": list(engine_input["prompt_token_ids"]), "pixel_values": image["pixel_values"].data}


class _RefusingLLM:
    """Stands in for a GPU engine: answers each conversation with its own text, and fails a whole call that
    holds a conversation saying "fail" (as vLLM does for one prompt it cannot take)."""

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, conversations: list[Any], params: list[SamplingParams], use_tqdm: bool) -> list[Any]:
        self.calls += 1
        texts = ["".join(part["text"] for part in c[0]["content"]) for c in conversations]
        if "fail" in texts:
            raise ValueError("prompt rejected")
        return [
            type("Out", (), {"outputs": [type("C", (), {"text": text})()] * p.n})()
            for text, p in zip(texts, params, strict=True)
        ]


def backend_generate() -> list[Any]:
    """``VLLMBackend.generate`` on the stand-in engine: a greedy answer stands for all n and is cut at the
    stop string, a beam-search request is refused alone, a sampled one keeps its n answers."""
    from harness.engine.requests import make_request
    from harness.models.base import GenerationParams
    from harness.models.vllm import VLLMBackend

    backend = VLLMBackend.__new__(VLLMBackend)
    backend._llm, backend._ranks = _RefusingLLM(), []
    requests = [
        make_request([ChatMessage.of_text("user", "yes\n\nno")], GenerationParams.from_kwargs({"until": "\n\n"}), n=3),
        make_request([ChatMessage.of_text("user", "beam")], GenerationParams.from_kwargs({"num_beams": 2})),
        make_request([ChatMessage.of_text("user", "hot")], GenerationParams.from_kwargs({"temperature": 0.5}), n=2),
    ]
    return [a if isinstance(a, list) else f"{type(a).__name__}: {a}" for a in backend.generate(requests)]


def main(out: Path) -> None:
    sampling = []
    for request in requests():
        params = SamplingParams(**sampling_kwargs(request))
        sampling.append({name: getattr(params, name) for name in SAMPLING_FIELDS})
    torch.save(
        {"sampling": sampling, "render": {arch: rendered(arch) for arch in ARCHS}, "generate": backend_generate()},
        out / "probe.pt",
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
