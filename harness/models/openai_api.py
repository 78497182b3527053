"""The ``openai:`` backend: any OpenAI-compatible ``/v1/chat/completions`` server (closed API models,
vLLM or ``transformers serve`` on loopback), through the official ``openai`` client.

Images travel as base64 PNG data URLs. ``n`` samples are asked for natively; a server that returns
fewer choices (many local servers ignore ``n``) is asked again, with seed + k for the k-th extra call,
until n completions exist. ``top_k`` and beam search have no equivalent in the API and are refused.
Stop strings are always applied to the returned text; ``send_stop=false`` keeps them out of the request
for servers that fail on ``stop`` (``transformers serve`` 5.24 does, for vision-language models).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models.base import Backend, GenerationRequest, Message, truncate_at_stop

_MODEL_ARGS = {"base_url", "api_key", "concurrency", "timeout", "max_retries", "send_stop"}
MAX_STOP_STRINGS = 4  # the API's limit; further stop strings are applied to the text afterwards


def image_data_url(image: Any) -> str:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The harness's chat messages (images as PIL) in the API's content-part format."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        parts = []
        for item in content:
            if item.get("type") == "image":
                parts.append({"type": "image_url",
                              "image_url": {"url": image_data_url(item.get("url", item.get("image")))}})
            elif item.get("type") == "text":
                parts.append({"type": "text", "text": item["text"]})
            else:
                raise UnsupportedRequestError(f"message content type {item.get('type')!r} is not supported")
        out.append({"role": message["role"], "content": parts})
    return out


class OpenAIBackend(Backend):
    """Chat completions over HTTP; requests of a batch run concurrently."""

    def __init__(self, model: str, model_args: dict[str, str]) -> None:
        unknown = sorted(set(model_args) - _MODEL_ARGS)
        if unknown:
            raise ModelSpecError(f"--model-args: unknown key(s) {', '.join(unknown)} for openai "
                                 f"(known: {', '.join(sorted(_MODEL_ARGS))})")
        try:
            import openai
        except ImportError:
            raise ModelSpecError("the openai backend needs the openai package: pip install '.[openai]'") from None
        self.model = model
        self.base_url = model_args.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.concurrency = int(model_args.get("concurrency", 4))
        self.send_stop = model_args.get("send_stop", "true").lower() in {"1", "true", "yes"}
        api_key = model_args.get("api_key") or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.client = openai.OpenAI(base_url=self.base_url, api_key=api_key,
                                    timeout=float(model_args.get("timeout", 120)),
                                    max_retries=int(model_args.get("max_retries", 3)))
        self._fingerprint = hashlib.sha256(f"openai|{self.base_url}|{model}".encode()).hexdigest()[:16]

    @classmethod
    def from_spec(cls, name: str, model_args: dict[str, str]) -> OpenAIBackend:
        return cls(name, model_args)

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    def info(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model, "base_url": self.base_url, "fingerprint": self.fingerprint,
                "smoke_test_model": False}

    def preferred_batch(self, requests: list[GenerationRequest], batch_size: int) -> list[list[GenerationRequest]]:
        size = max(batch_size, self.concurrency)
        return [requests[i : i + size] for i in range(0, len(requests), size)]

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            return list(pool.map(self._answer, requests))

    def _answer(self, request: GenerationRequest) -> list[str] | Exception:
        params = request.params
        if params.top_k is not None or params.num_beams > 1:
            return UnsupportedRequestError("the OpenAI API has no top_k or beam search; remove them for this backend")
        try:
            messages = to_openai_messages(request.messages)
            texts: list[str] = []
            call = 0
            while len(texts) < request.n:
                kwargs: dict[str, Any] = {
                    "model": self.model, "messages": messages, "max_tokens": params.max_new_tokens,
                    "temperature": params.temperature, "n": request.n - len(texts),
                    "seed": request.seed + call,
                }
                if params.do_sample:
                    kwargs["top_p"] = params.top_p
                if params.until and self.send_stop:
                    kwargs["stop"] = list(params.until[:MAX_STOP_STRINGS])
                response = self.client.chat.completions.create(**kwargs)
                texts += [truncate_at_stop(c.message.content or "", params.until) for c in response.choices]
                call += 1
                if not params.do_sample and texts:  # greedy: one completion stands for all n
                    texts = [texts[0]] * request.n
            return texts[: request.n]
        except Exception as exc:  # recorded on the sample; the run goes on
            return exc
