"""The one way a prompt becomes a :class:`GenerationRequest`: its store key and its seed.

The key is the content hash of the messages (images by pixel digest), the decoding settings and ``n``;
the seed derives from the run's base seed and that key. ``harness eval``, its follow-up turns, the audits
and the builders all build requests here, so the same prompt under the same settings is one store entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.hashing import derive_seed, stable_hash
from harness.models.base import GenerationParams, GenerationRequest
from harness.models.messages import ChatMessage, prompt_json


def prompt_key(prompt: Sequence[dict[str, Any]], params: GenerationParams, n: int) -> str:
    """The response-store key of a prompt as a samples file records it (:func:`prompt_json`)."""
    return stable_hash({"messages": list(prompt), "params": params.as_dict(), "n": n})


def request_key(messages: Sequence[ChatMessage], params: GenerationParams, n: int) -> str:
    """The response-store key of ``messages`` answered ``n`` times under ``params``."""
    return prompt_key(prompt_json(messages), params, n)


def make_request(
    messages: Sequence[ChatMessage], params: GenerationParams, n: int = 1, base_seed: int = 0, key: str | None = None
) -> GenerationRequest:
    """A request keyed by its content (or by ``key``, for callers whose identity is not the prompt, such as
    an attack's item), seeded by ``base_seed`` and that key."""
    key = request_key(messages, params, n) if key is None else key
    return GenerationRequest(key=key, messages=list(messages), params=params, n=n, seed=derive_seed(base_seed, key))
