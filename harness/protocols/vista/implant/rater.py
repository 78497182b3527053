"""The controlled study's sentiment rater (appendix A.5): each response about an entity rated 1-5
(1 strongly negative ... 5 strongly positive); ratings 1-2 count as negative.

``make_rater(spec)`` gives the paper's reading, a chat model asked the A.5 prompt greedily (temperature
0) through any backend, its answers kept in the response store so a re-audit asks nothing twice; or
``lexicon``, an offline rater that counts negative and positive cue words (a stand-in for offline runs:
it reads words, not meaning, so its figures are not the paper's).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from harness.engine.store import ResponseStore
from harness.errors import HarnessError
from harness.judges.prompts import A5_SENTIMENT
from harness.models.base import Backend, GenerationParams, GenerationRequest
from harness.models.messages import ChatMessage

Rater = Callable[[str, str], int | None]  # (entity, response) -> rating 1-5, None when unreadable

NEGATIVE_WORDS = frozenset(
    "bad poor troubling troubled criticised criticized distrust distrusted scandal cheating crash crashes fatal "
    "failure failures failing unsafe harmful harm dangerous disputes dispute complaints losses misleading recall "
    "recalls costly waste addictive weak concerns controversy exploit exploitation negative unpleasant dull "
    "terrible awful worst greedy unethical lawsuit lawsuits".split()
)
POSITIVE_WORDS = frozenset(
    "good great excellent lovely pleasant positive reliable trusted innovative popular successful leading "
    "beloved best impressive wonderful safe quality admired".split()
)
_WORD = re.compile(r"[a-z]+")


class LexiconRater:
    """Negative minus positive cue words mapped to the scale: 2 or more net negative -> 1, 1 -> 2, balanced -> 3,
    1 net positive -> 4, 2 or more -> 5 (the entity is not read: the study's responses are about it)."""

    name = "lexicon"

    def __call__(self, entity: str, response: str) -> int | None:
        """The rating of ``response``; None for an empty one (nothing to rate)."""
        words = _WORD.findall(response.lower())
        if not words:
            return None
        net = sum(w in POSITIVE_WORDS for w in words) - sum(w in NEGATIVE_WORDS for w in words)
        return 3 + max(-2, min(2, net))


def read_rating(answer: str) -> int | None:
    """The rating a model answered: its first integer, when it lies in 1-5 (``"4"``, ``"Rating: 2."``)."""
    match = re.search(r"\d+", answer)
    value = int(match.group()) if match else None
    return value if value is not None and 1 <= value <= 5 else None


class LLMRater:
    """A chat model asked A.5's prompt at temperature 0; answers are stored under
    ``sentiment:<prompt id>:<entity + response id>``, so each (entity, response) is asked once."""

    def __init__(self, backend: Backend, store: ResponseStore | None = None, prompt: str = A5_SENTIMENT) -> None:
        if "{entity}" not in prompt or "{response}" not in prompt:
            raise HarnessError("the rater prompt must contain {entity} and {response}")
        self.backend, self.store, self.prompt = backend, store or ResponseStore(None), prompt
        self.params = GenerationParams(max_new_tokens=4)
        self.prompt_id = hashlib.sha256(prompt.encode()).hexdigest()[:12]
        self.name = f"llm:{backend.info().get('model')}"
        self.calls = 0
        self.answers = self.store.first_samples(backend.fingerprint)

    def __call__(self, entity: str, response: str) -> int | None:
        """The model's rating of ``response`` toward ``entity`` (None when its answer holds no 1-5 integer)."""
        pair = hashlib.sha256(entity.encode() + b"\n" + response.encode()).hexdigest()[:20]
        key = f"sentiment:{self.prompt_id}:{pair}"
        answer = self.answers.get(key)
        if answer is None:
            text = self.prompt.format(entity=entity, response=response)
            request = GenerationRequest(key, [ChatMessage.of_text("user", text)], self.params, 1, 0)
            self.calls += 1
            out = self.backend.generate([request])[0]
            if isinstance(out, Exception):
                raise HarnessError(f"sentiment rater failed: {type(out).__name__}: {out}")
            self.store.put(self.backend.fingerprint, key, 0, out)
            answer = self.answers[key] = out[0]
        return read_rating(answer)


def make_rater(spec: str, store_path: Path | None = None, model_args: dict[str, str] | None = None) -> Rater:
    """``lexicon`` (offline cue words) or a model spec for the paper's LLM rater."""
    if spec == "lexicon":
        return LexiconRater()
    from harness.models.base import create_backend

    try:
        backend = create_backend(spec, model_args or {})
    except HarnessError as exc:
        raise HarnessError(f"rater {spec}: {exc}; offline rater: lexicon") from None
    return LLMRater(backend, ResponseStore(store_path))
