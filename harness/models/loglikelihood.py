"""Teacher-forced scoring of continuations: the ``loglikelihood`` requests of ``multiple_choice`` tasks.

A prompt and its choices share every token up to the assistant's answer, so the prompt runs once (images
included) and its key/value cache is repeated across the choices, which then run together as one batch:
one prefix pass and one batch pass per prompt instead of one full pass per choice.

Each choice is scored as lmms-eval's ``llava_hf`` scores it: the conversation with the choice as the
assistant's turn, rendered by the chat template, tokenized whole; the scored tokens are those after the
prompt (the template's end-of-turn tokens included).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.models.messages import ChatMessage
from harness.results.schema import ScoredChoice

if TYPE_CHECKING:
    from harness.models.hf import HFBackend


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """One prompt and the continuations to score after it; ``key`` is its content hash in the store."""

    key: str
    messages: list[ChatMessage] = field(compare=False)
    continuations: tuple[str, ...] = ()


@runtime_checkable
class ScoringBackend(Protocol):
    """A backend that scores continuations (``hf:`` teacher-forced, ``vllm:`` from prompt logprobs)."""

    @property
    def fingerprint(self) -> str:
        """The model's identity in the response store."""

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[list[ScoredChoice] | Exception]:
        """Each request's continuation scores, or the exception that prevented them."""


def _common_prefix(rows: Sequence[list[int]]) -> int:
    first = rows[0]
    n = min(len(r) for r in rows)
    for i in range(n):
        if any(r[i] != first[i] for r in rows):
            return i
    return n


# Models with multimodal rotary positions (M-RoPE), which a cached continuation pass cannot be given (with or
# without an image), and the BLIP models, whose output nests the language model's cache: they score each
# choice in one full pass instead of repeating a shared prefix's cache.
_FULL_PASS = {"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5", "blip-2", "instructblip"}


def score_continuations(
    backend: HFBackend, messages: list[ChatMessage], continuations: Sequence[str]
) -> list[ScoredChoice]:
    """Scores of each continuation as the assistant's answer to ``messages``."""
    import torch

    prompt_text, images = backend._render(messages)
    prompt = backend.encode([prompt_text], [images])
    n_prompt = int(prompt["input_ids"].shape[1])
    fulls = [
        backend.encode([backend._render([*messages, assistant_message(c)], add_generation_prompt=False)[0]], [images])
        for c in continuations
    ]
    for full in fulls:  # InstructBLIP's Q-Former reads the instruction, not the answer being scored
        full.update({k: v for k, v in prompt.items() if k.startswith("qformer_")})
    rows = [f["input_ids"][0].tolist() for f in fulls]
    with torch.inference_mode():
        if backend.model_type in _FULL_PASS:
            answer_logits = [_full_pass(backend, f, n_prompt) for f in fulls]
        else:
            answer_logits = _shared_prefix_pass(backend, fulls[0], rows, n_prompt)
    scores = []
    for choice, row, logits in zip(continuations, rows, answer_logits, strict=True):
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        target = torch.tensor(row[n_prompt:], device=logprobs.device)
        picked = logprobs.gather(-1, target[:, None])[:, 0]
        scores.append(
            ScoredChoice(
                continuation=choice,
                loglikelihood=float(picked.sum()),
                tokens=len(row) - n_prompt,
                is_greedy=bool((logprobs.argmax(-1) == target).all()),
            )
        )
    return scores


def _full_pass(backend: HFBackend, encoded: Any, n_prompt: int) -> Any:
    """The logits that predict the answer tokens, from one plain pass over prompt + answer."""
    return backend.model(**encoded).logits[0, n_prompt - 1 : -1]


def _shared_prefix_pass(backend: HFBackend, first: Any, rows: list[list[int]], n_prompt: int) -> list[Any]:
    """Answer-predicting logits of every choice: the shared tokens once (images there), their cache repeated
    over the choices, then all choices' remaining tokens as one right-padded batch."""
    import torch

    # The shared part ends before the prompt's last token, whose logits score the first answer token.
    shared = min(n_prompt - 1, _common_prefix(rows))
    # Image inputs go with the shared part; per-token inputs are cut to it.
    extra = {
        k: v[:, :shared] if v.dim() == 2 and v.shape[1] == len(rows[0]) else v
        for k, v in first.items()
        if k not in {"input_ids", "attention_mask"}
    }
    device = backend.model.device
    cache = None
    if shared > 0:
        ids = torch.tensor([rows[0][:shared]], device=device)
        cache = backend.model(
            input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True, **extra
        ).past_key_values
        cache.batch_repeat_interleave(len(rows))
    tails = [r[shared:] for r in rows]
    width = max(len(t) for t in tails)
    pad = backend.tokenizer.pad_token_id or 0
    ids = torch.tensor([t + [pad] * (width - len(t)) for t in tails], device=device)
    mask = torch.tensor([[1] * (shared + len(t)) + [0] * (width - len(t)) for t in tails], device=device)
    logits = backend.model(
        input_ids=ids,
        attention_mask=mask,
        past_key_values=cache,
        use_cache=False,
        **({} if cache is not None else extra),
    ).logits
    return [logits[i, n_prompt - 1 - shared : len(row) - 1 - shared] for i, row in enumerate(rows)]


def assistant_message(text: str) -> ChatMessage:
    """``text`` as the assistant's turn (how a choice is scored)."""
    return ChatMessage.of_text("assistant", text)


@runtime_checkable
class StreamingScorer(Protocol):
    """A scoring backend that schedules many requests itself (``vllm:``, Ray replicas) and yields each
    request's scores as its call returns, so the caller stores them at once."""

    def scores(
        self, requests: list[LoglikelihoodRequest], batch_size: int
    ) -> Iterator[tuple[LoglikelihoodRequest, list[ScoredChoice] | Exception]]:
        """Each request with its scores or exception, as they come."""
