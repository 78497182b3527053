"""``multiple_choice`` requests: one per doc (its prompt and every choice), answered from the response store
or by the backend's teacher-forced scoring, and cached like generations (so they survive kill -9 the same
way: each answered prompt is committed as soon as it is scored)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from harness.engine.store import ResponseStore
from harness.errors import UnsupportedRequestError
from harness.hashing import stable_hash
from harness.models.base import Backend
from harness.models.loglikelihood import LoglikelihoodRequest, ScoringBackend, StreamingScorer
from harness.models.messages import ChatMessage, prompt_json
from harness.results.sample_error import SampleError
from harness.results.schema import ScoredChoice

log = logging.getLogger(__name__)


def choice_key(prompt: Sequence[dict[str, Any]], continuations: Sequence[str]) -> str:
    """The store key of scoring ``continuations`` after a prompt as a samples file records it."""
    return stable_hash({"loglikelihood": list(prompt), "continuations": list(continuations)})


def choice_request(messages: Sequence[ChatMessage], continuations: Sequence[str]) -> LoglikelihoodRequest:
    """The request scoring ``continuations`` after ``messages``, keyed by both."""
    key = choice_key(prompt_json(messages), continuations)
    return LoglikelihoodRequest(key=key, messages=list(messages), continuations=tuple(continuations))


def answer_choices(
    backend: Backend, requests: Sequence[LoglikelihoodRequest], store: ResponseStore, batch_size: int = 1
) -> tuple[dict[str, list[ScoredChoice]], dict[str, SampleError], int]:
    """Scores per request key (cached ones first), per-request errors, and how many were computed now."""
    if not requests:
        return {}, {}, 0
    if not isinstance(backend, ScoringBackend):
        raise UnsupportedRequestError(f"{type(backend).__name__} cannot score continuations (multiple_choice)")
    unique = {r.key: r for r in requests}
    scores: dict[str, list[ScoredChoice]] = {}
    missing = []
    for req in unique.values():
        cached = store.get(backend.fingerprint, req.key, 0, len(req.continuations))
        if cached is None:
            missing.append(req)
        else:
            scores[req.key] = [ScoredChoice.model_validate_json(text) for text in cached]
    errors: dict[str, SampleError] = {}
    for req, out in _scored(backend, missing, batch_size):
        if isinstance(out, Exception):
            errors[req.key] = SampleError("scoring failed", f"{type(out).__name__}: {out}")
            log.debug("request %s failed", req.key, exc_info=out)
            continue
        store.put(backend.fingerprint, req.key, 0, [c.model_dump_json() for c in out])
        scores[req.key] = out
    return scores, errors, len(missing) - len(errors)


def _scored(
    backend: ScoringBackend, requests: list[LoglikelihoodRequest], batch_size: int
) -> Iterator[tuple[LoglikelihoodRequest, list[ScoredChoice] | Exception]]:
    """Each request with its scores as they come: a backend that schedules many at once (vLLM, Ray) gets
    them all; any other scores one per call, so each is stored as soon as it is scored."""
    if isinstance(backend, StreamingScorer):
        yield from backend.scores(requests, batch_size)
        return
    for req in requests:
        yield from zip([req], backend.loglikelihood([req]), strict=True)
