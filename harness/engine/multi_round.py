"""lmms-eval's ``generate_until_multi_round``: after the first answer, each round's images and prompt come
from the task's ``doc_to_text`` called with the answers so far (``previous_output``, ``round_idx``,
``previous_round_info``); it returns ``(visuals, context, terminal_signal, round_results, round_info)``,
and a true ``terminal_signal`` ends the doc with ``round_results`` as its result, as lmms-eval's models run
it. Every round is its own greedy request keyed by its prompt, so rounds are cached and resumed one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.engine.requests import make_request
from harness.engine.task_prompts import BadInputError, TaskPrompts
from harness.models.base import GenerationParams, GenerationRequest
from harness.results.sample_error import SampleError
from harness.results.schema import RequestCounts, Turn

MAX_ROUNDS = 32  # a task that never signals the end is that doc's error, not an endless run
Generate = Callable[[list[GenerationRequest]], tuple[dict[str, list[str]], dict[str, SampleError], RequestCounts]]


@dataclass
class Rounds:
    """One doc's rounds after the first: the turns asked, the result its task returned, or its error."""

    doc: dict[str, Any]
    outputs: list[str]  # previous_output for the next round
    info: Any = None
    turns: list[Turn] = field(default_factory=list)
    result: list[str] | None = None
    error: SampleError | None = None


def run_rounds(
    prompts: TaskPrompts,
    first: dict[int, tuple[dict[str, Any], str]],
    params: GenerationParams,
    seed: int,
    generate: Generate,
    stats: RequestCounts,
) -> dict[int, Rounds]:
    """Every doc's rounds (doc_id -> (doc, first answer)), a round of all unfinished docs at a time."""
    chains = {doc_id: Rounds(doc, [answer]) for doc_id, (doc, answer) in first.items()}
    for round_idx in range(1, MAX_ROUNDS + 1):
        pending: dict[int, GenerationRequest] = {}
        for doc_id, chain in chains.items():
            if chain.result is not None or chain.error is not None:
                continue
            try:
                step = prompts.next_round(chain.doc, chain.outputs, round_idx, chain.info)
            except BadInputError as exc:
                chain.error = SampleError("bad input", str(exc))
                continue
            chain.info = step.info
            if step.terminal:
                chain.result = [str(r) for r in step.results]
                continue
            chain.outputs = list(step.results)
            request = make_request(step.messages, params, 1, seed)
            chain.turns.append(Turn(prompt=step.context, request_keys=[request.key]))
            pending[doc_id] = request
        if not pending:
            return chains
        answers, errors, counts = generate(list(pending.values()))
        stats.add_follow_up(counts)
        for doc_id, request in pending.items():
            chain = chains[doc_id]
            if request.key in errors:
                chain.turns[-1].error = chain.error = errors[request.key]
                continue
            answer = answers[request.key][0]
            chain.turns[-1].responses = [answer]
            chain.outputs.append(answer)
    for chain in chains.values():
        if chain.result is None and chain.error is None:
            chain.error = SampleError("bad input", f"doc_to_text gave no terminal signal in {MAX_ROUNDS} rounds")
    return chains
