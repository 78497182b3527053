"""The one way a prompt becomes a :class:`GenerationRequest`: its store key and its seed.

The key is the content hash of the messages (images by pixel digest), the decoding settings and ``n``;
the seed derives from the run's base seed and that key. ``harness eval``, its follow-up turns, the audits
and the builders all build requests here, so the same prompt under the same settings is one store entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.hashing import derive_seed, stable_hash
from harness.models.base import GenerationParams, GenerationRequest, Message


def request_key(messages: Sequence[Message], params: GenerationParams, n: int) -> str:
    """The response-store key of ``messages`` answered ``n`` times under ``params``."""
    return stable_hash({"messages": list(messages), "params": params.as_dict(), "n": n})


def make_request(
    messages: Sequence[Message], params: GenerationParams, n: int = 1, base_seed: int = 0, key: str | None = None
) -> GenerationRequest:
    """A request keyed by its content (or by ``key``, for callers whose identity is not the prompt, such as
    an attack's item), seeded by ``base_seed`` and that key."""
    key = request_key(messages, params, n) if key is None else key
    return GenerationRequest(key=key, messages=list(messages), params=params, n=n, seed=derive_seed(base_seed, key))
