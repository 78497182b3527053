"""Run in the vLLM environment (``VLLM_PYTHON -m tests.vllm_probe OUT``) by tests/test_vllm_backend.py: what
vLLM's own classes make of the harness's translation of requests, saved to OUT/probe.pt for the test to
compare with the hf backend (another transformers version, in the main environment).

On a CPU vLLM cannot run a model, but its renderer can: it applies the chat template, parses the image
parts and runs the model's multi-modal processor exactly as ``LLM.chat`` does before scheduling.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from vllm import SamplingParams
from vllm.config import DeviceConfig, ModelConfig, VllmConfig
from vllm.logprobs import append_logprobs_for_next_position, create_prompt_logprobs
from vllm.renderers.params import ChatParams
from vllm.renderers.registry import renderer_from_config

from harness.models.tiny import tiny_model_path
from harness.models.vllm import VLLMSettings, answer_all, sampling_kwargs, to_vllm_messages
from tests.test_vllm_backend import ARCHS, conversation, requests, scoring_requests

SAMPLING_FIELDS = ("n", "seed", "temperature", "top_p", "top_k", "max_tokens", "stop")


def renderer(arch: str) -> Any:
    """vLLM's renderer of the tiny model, as ``LLM`` builds it for ``--model-args dtype=float32``."""
    settings = VLLMSettings.from_model_args({"dtype": "float32", "limit_mm_per_prompt": "1"})
    kwargs = settings.engine_kwargs()
    # The engine rescales and normalises pixels on the GPU by default (a uint8 tensor leaves the processor);
    # here the processor does it, to compare the pixels with hf's. Without the engine behind it, the
    # renderer's cache of processed images is off (a cached image comes back as None, for the engine's copy).
    model_config = ModelConfig(model=str(tiny_model_path(arch)), dtype=kwargs["dtype"],
                               limit_mm_per_prompt=kwargs["limit_mm_per_prompt"], mm_device_do_normalize=False,
                               mm_processor_cache_gb=0)
    return renderer_from_config(VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu")))


def render(renderer: Any, messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> dict[str, Any]:
    """The engine input ``LLM.chat`` makes of one conversation (``LLM._preprocess_chat`` with its defaults)."""
    params = ChatParams(chat_template=None, chat_template_content_format="auto",
                        chat_template_kwargs={"add_generation_prompt": add_generation_prompt,
                                              "continue_final_message": False, "tools": None, "tokenize": False})
    tokens = renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
    _, (engine_input,) = renderer.render_chat([messages], params, tokens)
    return engine_input


def rendered(arch: str) -> dict[str, Any]:
    """The token ids and pixel values vLLM's renderer makes of the test conversation, as ``LLM.chat`` would."""
    engine_input = render(renderer(arch), to_vllm_messages(conversation()))
    (image,) = engine_input["mm_kwargs"]["image"]
    return {"input_ids": list(engine_input["prompt_token_ids"]), "pixel_values": image["pixel_values"].data}


class RendererLLM:
    """A CPU stand-in for vLLM's engine in ``score_all``: vLLM's own renderer turns each conversation into
    token ids and image inputs, the tiny model's hf forward gives the logits (on a GPU vLLM's kernels do),
    and vLLM's own ``append_logprobs_for_next_position`` writes the prompt logprobs (the actual token with its
    rank, plus the top ``prompt_logprobs``) into a ``RequestOutput``, flat or not, as the engine does. A
    conversation saying "fail" fails the whole call."""

    def __init__(self, arch: str, flat: bool) -> None:
        from transformers import AutoModelForImageTextToText

        self.renderer = renderer(arch)
        self.model = AutoModelForImageTextToText.from_pretrained(tiny_model_path(arch), dtype=torch.float32)
        self.flat = flat

    def chat(self, conversations: list[Any], params: SamplingParams, add_generation_prompt: bool,
             use_tqdm: bool) -> list[Any]:
        from vllm.multimodal.inputs import MultiModalFlatField
        from vllm.outputs import RequestOutput

        if any(part.get("text") == "fail" for c in conversations for m in c for part in m["content"]):
            raise ValueError("prompt rejected")
        outputs = []
        for index, messages in enumerate(conversations):
            engine_input = render(self.renderer, messages, add_generation_prompt)
            ids = list(engine_input["prompt_token_ids"])
            images = {}
            for item in engine_input.get("mm_kwargs", {}).get("image", []):
                for key, elem in item.items():  # batched fields get their batch axis back
                    images[key] = elem.data if isinstance(elem.field, MultiModalFlatField) else elem.data[None]
            if "image_grid_thw" in images:  # Qwen2-VL's M-RoPE needs to know which tokens are the image's
                images["mm_token_type_ids"] = (torch.tensor([ids]) == self.model.config.image_token_id).long()
            logprobs = None
            if params.prompt_logprobs is not None:
                with torch.no_grad():
                    logits = self.model(input_ids=torch.tensor([ids]), **images).logits[0].float()
                rows = torch.log_softmax(logits, dim=-1)
                logprobs = create_prompt_logprobs(self.flat)
                for t in range(1, len(ids)):
                    row, actual = rows[t - 1], ids[t]
                    top = row.topk(params.prompt_logprobs).indices.tolist()
                    rank = int((row > row[actual]).sum()) + 1
                    append_logprobs_for_next_position(logprobs, [actual, *top], [float(row[i]) for i in [actual, *top]],
                                                      [None] * (1 + len(top)), rank, params.prompt_logprobs)
            outputs.append(RequestOutput(str(index), None, ids, logprobs, [], True))
        return outputs


def scoring() -> dict[str, Any]:
    """``VLLMBackend.loglikelihood`` on the stand-in engine for each tiny model: an image prompt with three
    choices, a text prompt with two, and one that fails alone."""
    from harness.models.vllm import VLLMBackend

    out: dict[str, Any] = {}
    for arch in ARCHS:
        for flat in (False, True):
            backend = VLLMBackend.__new__(VLLMBackend)
            backend._llm, backend._ranks = RendererLLM(arch, flat), []
            backend.settings = VLLMSettings()
            scored = backend.loglikelihood(scoring_requests())
            out[f"{arch}/{'flat' if flat else 'list'}"] = [
                [c.model_dump() for c in s] if isinstance(s, list) else f"{type(s).__name__}: {s}" for s in scored]
    return out


class _RefusingLLM:
    """Stands in for a GPU engine: answers each conversation with its own text, and fails a whole call that
    holds a conversation saying "fail" (as vLLM does for one prompt it cannot take)."""

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, conversations: list[Any], params: list[SamplingParams], use_tqdm: bool) -> list[Any]:
        self.calls += 1
        if any(c[0]["content"] == "fail" for c in conversations):
            raise ValueError("prompt rejected")
        return [type("Out", (), {"outputs": [type("C", (), {"text": c[0]["content"]})()] * p.n})()
                for c, p in zip(conversations, params, strict=True)]


def isolation() -> dict[str, Any]:
    llm = _RefusingLLM()
    texts = ["a", "b", "fail", "d"]
    answers = answer_all(llm, [[{"role": "user", "content": t}] for t in texts],
                         [{"n": 1, "max_tokens": 4}] * len(texts))
    return {"answers": [a if isinstance(a, list) else f"{type(a).__name__}: {a}" for a in answers],
            "calls": llm.calls}


def backend_generate() -> list[Any]:
    """``VLLMBackend.generate`` on the stand-in engine: a greedy answer stands for all n and is cut at the
    stop string, a beam-search request is refused alone, a sampled one keeps its n answers."""
    from harness.engine.requests import make_request
    from harness.models.base import GenerationParams
    from harness.models.vllm import VLLMBackend

    backend = VLLMBackend.__new__(VLLMBackend)
    backend._llm, backend._ranks = _RefusingLLM(), []
    requests = [
        make_request([{"role": "user", "content": "yes\n\nno"}], GenerationParams.from_kwargs({"until": "\n\n"}),
                     n=3),
        make_request([{"role": "user", "content": "beam"}], GenerationParams.from_kwargs({"num_beams": 2})),
        make_request([{"role": "user", "content": "hot"}], GenerationParams.from_kwargs({"temperature": 0.5}), n=2),
    ]
    return [a if isinstance(a, list) else f"{type(a).__name__}: {a}" for a in backend.generate(requests)]


def main(out: Path) -> None:
    sampling = []
    for request in requests():
        params = SamplingParams(**sampling_kwargs(request))
        sampling.append({name: getattr(params, name) for name in SAMPLING_FIELDS})
    torch.save({"sampling": sampling, "render": {arch: rendered(arch) for arch in ARCHS},
                "isolation": isolation(), "generate": backend_generate(), "scoring": scoring()}, out / "probe.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
