"""The ``openai:`` backend: any OpenAI-compatible ``/v1/chat/completions`` server (closed API models,
vLLM or ``transformers serve`` on loopback), through the official ``openai`` client.

Images travel as base64 PNG data URLs. ``n`` samples are asked for natively; a server that returns
fewer choices (many local servers ignore ``n``) is asked again, with seed + k for the k-th extra call,
until n completions exist. A call that returns no choice at all ends the request with an error, so a
request costs at most n calls. A choice without text (null content, ``finish_reason: content_filter``)
is an error too: recorded on the sample, never cached as an answer, asked again by the next run.
``top_k`` and beam search have no equivalent in the API and are refused.
Stop strings are always applied to the returned text; ``send_stop=false`` keeps them out of the request
for servers that fail on ``stop`` (``transformers serve`` 5.24 does, for vision-language models).
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from harness.errors import ModelSpecError, UnsupportedRequestError
from harness.models.base import SCORING_TYPES, Backend, GenerationRequest, finished_text
from harness.models.messages import ChatMessage, ImagePart

_MODEL_ARGS = {"base_url", "api_key", "concurrency", "timeout", "max_retries", "send_stop"}
MAX_STOP_STRINGS = 4  # the API's limit; further stop strings are applied to the text afterwards
#: What a run without the [openai] extra is told (at preflight, and by the backend itself).
MISSING_OPENAI = "the openai backend needs the openai package: pip install '.[openai]'"
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
T = TypeVar("T")


class NoCompletionError(Exception):
    """The server answered without a usable completion (no choices, null content, a content filter).
    Returned per request, so the runner records it on the sample and does not cache it."""


def _model_arg(
    model_args: dict[str, str],
    key: str,
    default: T,
    parse: Callable[[str], T | None],
    valid: Callable[[T], bool],
    expected: str,
) -> T:
    """One model argument parsed and range-checked; a bad value fails with one line naming key and value."""
    text = model_args.get(key)
    if text is None:
        return default
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise ModelSpecError(f"--model-args {key}={text!r}: expected {expected}")
    return value


def image_data_url(image: Any) -> str:
    """A PIL image as the PNG data URL the chat-completions API takes."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def to_openai_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """The harness's chat messages (images as PIL) in the API's content-part format."""
    return [
        {
            "role": message.role,
            "content": [
                {"type": "image_url", "image_url": {"url": image_data_url(part.image)}}
                if isinstance(part, ImagePart)
                else {"type": "text", "text": part.text}
                for part in message.content
            ],
        }
        for message in messages
    ]


class OpenAIBackend(Backend):
    """Chat completions over HTTP; requests of a batch run concurrently."""

    def __init__(self, model: str, model_args: dict[str, str]) -> None:
        unknown = sorted(set(model_args) - _MODEL_ARGS)
        if unknown:
            raise ModelSpecError(
                f"--model-args: unknown key(s) {', '.join(unknown)} for openai "
                f"(known: {', '.join(sorted(_MODEL_ARGS))})"
            )
        self.concurrency = _model_arg(model_args, "concurrency", 4, int, lambda v: v >= 1, "a whole number >= 1")
        timeout = _model_arg(
            model_args, "timeout", 120.0, float, lambda v: math.isfinite(v) and v > 0, "a number of seconds > 0"
        )
        max_retries = _model_arg(model_args, "max_retries", 3, int, lambda v: v >= 0, "a whole number >= 0")
        self.send_stop = _model_arg(
            model_args, "send_stop", True, lambda t: _BOOLEANS.get(t.lower()), lambda v: True, "true or false"
        )
        try:
            import openai  # the [openai] extra
        except ImportError:
            raise ModelSpecError(MISSING_OPENAI) from None
        self.model = model
        self.base_url = model_args.get("base_url") or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        api_key = model_args.get("api_key") or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
        self._fingerprint = hashlib.sha256(f"openai|{self.base_url}|{model}".encode()).hexdigest()[:16]

    def supports(self, output_type: str) -> bool:
        """Generation only: the chat completions API returns log-probabilities of generated tokens, never of a
        given continuation, so ``multiple_choice`` tasks are refused before any request."""
        if output_type in SCORING_TYPES:
            raise UnsupportedRequestError(
                f"openai: {output_type} tasks need log-probabilities of given text; "
                "the chat completions API returns them only for generated tokens "
                "(run the task with hf:)"
            )
        return super().supports(output_type)

    @classmethod
    def from_spec(cls, name: str, model_args: dict[str, str]) -> OpenAIBackend:
        """The backend for ``openai:MODEL`` (``base_url``, ``api_key`` and the rest from ``--model-args``)."""
        return cls(name, model_args)

    @property
    def fingerprint(self) -> str:
        """The served model's identity in the response store: its name and the server's address."""
        return self._fingerprint

    def info(self) -> dict[str, Any]:
        """What provenance records of the served model."""
        return {
            "backend": "openai",
            "model": self.model,
            "base_url": self.base_url,
            "fingerprint": self.fingerprint,
            "smoke_test_model": False,
        }

    def preferred_batch(self, requests: list[GenerationRequest], batch_size: int) -> list[list[GenerationRequest]]:
        """Batches of at least ``concurrency`` requests, so the thread pool stays full."""
        size = max(batch_size, self.concurrency)
        return [requests[i : i + size] for i in range(0, len(requests), size)]

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        """Answers for a batch, ``concurrency`` requests in flight at once; a failed request is its own exception."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._answer, requests))

    def _answer(self, request: GenerationRequest) -> list[str] | Exception:
        params = request.params
        if params.top_k is not None or params.num_beams > 1:
            return UnsupportedRequestError("the OpenAI API has no top_k or beam search; remove them for this backend")
        try:
            messages = to_openai_messages(request.messages)
            texts: list[str] = []
            call = 0
            while len(texts) < request.n:  # every call adds a choice or raises: at most n calls
                kwargs: dict[str, Any] = {
                    "model": self.model,
                    "messages": messages,
                    "max_tokens": params.max_new_tokens,
                    "temperature": params.temperature,
                    "n": request.n - len(texts),
                    "seed": request.seed + call,
                }
                if params.do_sample:
                    kwargs["top_p"] = params.top_p
                if params.until and self.send_stop:
                    kwargs["stop"] = list(params.until[:MAX_STOP_STRINGS])
                response = self.client.chat.completions.create(**kwargs)
                if not response.choices:
                    raise NoCompletionError(
                        f"the server returned no choices (call {call + 1}, "
                        f"{len(texts)} of {request.n} completions so far)"
                    )
                texts += [_choice_text(choice, params.until) for choice in response.choices]
                call += 1
                if not params.do_sample:  # greedy: one completion stands for all n
                    texts = [texts[0]] * request.n
            return texts[: request.n]
        except Exception as exc:  # recorded on the sample; the run goes on
            return exc


def _choice_text(choice: Any, until: tuple[str, ...]) -> str:
    """A choice's text cut at the stop strings; a refusal or a missing text raises instead of reading as ""."""
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    finish_reason = getattr(choice, "finish_reason", None)
    if finish_reason == "content_filter" or not isinstance(content, str):
        refusal = getattr(message, "refusal", None)
        raise NoCompletionError(
            f"the server returned no text (finish_reason {finish_reason!r}"
            + (f", refusal {refusal!r}" if refusal else "")
            + ")"
        )
    return finished_text(content, until)
