"""Answering a run's requests: each from the response store, else from the backend, in batches; then the
follow-up turns of multi-turn tasks and the rounds of multi-round ones, and the scoring requests of
``multiple_choice`` tasks. Audits and builders answer their own requests through the same path
(:func:`answer_requests`).
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass

from tqdm.auto import tqdm

from harness.engine.loglikelihood import answer_choices
from harness.engine.multi_round import Generate, Rounds, run_rounds
from harness.engine.progress import generation_label
from harness.engine.requests import make_request
from harness.engine.scoring_pass import TaskScoring
from harness.engine.store import ResponseStore
from harness.engine.task_prompts import MULTI_ROUND
from harness.engine.task_requests import PreparedTask
from harness.models.base import Backend, GenerationParams, GenerationRequest
from harness.models.messages import ChatMessage
from harness.results.sample_error import SampleError
from harness.results.schema import RequestCounts, SampleRecord, ScoredChoice, Turn
from harness.unencodable import writable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answerer:
    """Where requests are answered: the store first, then ``backend`` in batches of ``batch_size``."""

    backend: Backend
    store: ResponseStore
    batch_size: int = 1
    show_progress: bool = True

    def answer(
        self, requests: list[GenerationRequest], desc: str = "generate"
    ) -> tuple[dict[str, list[str]], dict[str, SampleError], RequestCounts]:
        """Answer every request from the store or the backend; returns responses, errors and counts. The
        progress bar (labelled ``desc``) shows only when something is left to generate."""
        backend, store = self.backend, self.store
        unique: dict[str, GenerationRequest] = {}
        for req in requests:
            unique.setdefault(req.key, req)
        responses: dict[str, list[str]] = {}
        missing = []
        for req in unique.values():
            cached = store.get(backend.fingerprint, req.key, req.seed, req.n)
            if cached is None:
                missing.append(req)
            else:
                responses[req.key] = cached
        errors: dict[str, SampleError] = {}
        stats = RequestCounts(requests=len(requests), unique_requests=len(unique), cached=len(responses))
        bar = tqdm(
            total=sum(r.n for r in missing),
            unit="sample",
            desc=generation_label(desc, missing),
            disable=not self.show_progress or not missing,
        )
        try:
            for req, out in backend.answer(missing, self.batch_size):
                if isinstance(out, Exception):
                    errors[req.key] = SampleError("generation failed", f"{type(out).__name__}: {out}")
                    log.debug("request %s failed", req.key, exc_info=out)
                else:
                    out = _writable_answers(req.key, out, stats)
                    store.put(backend.fingerprint, req.key, req.seed, out)
                    responses[req.key] = out
                    stats.generated += 1
                    stats.generated_samples += len(out)
                bar.update(req.n)
        finally:
            bar.close()
        return responses, errors, stats


def _writable_answers(key: str, answers: list[str], stats: RequestCounts) -> list[str]:
    """A request's answers as the store and the samples file can hold them (characters UTF-8 cannot hold
    as U+FFFD); a request that needed it is noted, so its sample is marked."""
    fixed = [writable(answer) for answer in answers]
    if any(replaced for _, replaced in fixed):
        stats.replaced.add(key)
        log.warning("request %s: an answer held characters UTF-8 cannot hold; kept with U+FFFD in their place", key)
    return [text for text, _ in fixed]


def answer_requests(
    backend: Backend,
    requests: list[GenerationRequest],
    store: ResponseStore,
    batch_size: int = 1,
    show_progress: bool = False,
) -> tuple[dict[str, list[str]], dict[str, SampleError]]:
    """Responses (and per-request errors) for requests built outside a task (audits, builders), through
    the same store, deduplication and batching as ``harness eval``."""
    responses, errors, _ = Answerer(backend, store, batch_size, show_progress).answer(requests)
    return responses, errors


@dataclass(frozen=True)
class Answers:
    """What the model answered for every task of a run: responses and errors by request key, scored
    choices, the turns and rounds after the first answer by (task, doc id), the counts and the time taken."""

    responses: dict[str, list[str]]
    errors: dict[str, SampleError]
    scores: dict[str, list[ScoredChoice]]
    turns: dict[tuple[str, int], list[Turn]]
    rounds: dict[tuple[str, int], Rounds]
    stats: RequestCounts
    seconds: float

    def scoring_input(self, task: PreparedTask) -> TaskScoring:
        """A task's records with what the model answered (responses, scored choices, turns, rounds) or why
        it did not, ready to score; a sample whose answers needed replacement characters is marked."""
        final = []
        for record in task.records:
            key, at = record.request_key, (task.config.task, record.doc_id)
            if record.error is None and key is not None:
                if key in self.errors:
                    record = record.model_copy(update={"error": self.errors[key]})
                elif key in self.scores:
                    record = record.model_copy(update={"choices": self.scores[key]})
                elif at in self.rounds:
                    chain = self.rounds[at]
                    record = record.model_copy(
                        update={"responses": chain.result or [], "turns": chain.turns, "error": chain.error}
                    )
                else:
                    record = record.model_copy(
                        update={"responses": self.responses[key], "turns": self.turns.get(at, [])}
                    )
            final.append(_marked(record, self.stats.replaced))
        return TaskScoring(task.scorer, final, task.docs)


def _marked(record: SampleRecord, replaced: set[str]) -> SampleRecord:
    """The sample marked ``text_replaced`` when an answer of its request or of its turns needed it."""
    keys = {record.request_key, *(key for turn in record.turns for key in turn.request_keys)}
    return record.model_copy(update={"text_replaced": True}) if keys & replaced else record


def answer_tasks(answerer: Answerer, tasks: list[PreparedTask], seed: int) -> Answers:
    """Every request of ``tasks``: first answers, then follow-up turns and rounds (their requests seeded
    from ``seed``), then the choices scored."""
    started = time.time()
    responses, errors, stats = answerer.answer([r for t in tasks for r in t.requests])
    turns = _follow_up_turns(answerer, tasks, responses, seed, stats)
    rounds = _multi_rounds(answerer, tasks, responses, seed, stats)
    scores, score_errors, stats.scored = answer_choices(
        answerer.backend, [r for t in tasks for r in t.scoring], answerer.store, answerer.batch_size
    )
    errors.update(score_errors)
    return Answers(responses, errors, scores, turns, rounds, stats, time.time() - started)


def _follow_up_turns(
    answerer: Answerer,
    tasks: list[PreparedTask],
    responses: dict[str, list[str]],
    seed: int,
    stats: RequestCounts,
) -> dict[tuple[str, int], list[Turn]]:
    """Turns 2.. of multi-turn tasks (``metadata: {harness_turns: [...]}``), one round per turn.

    Turn t+1 of sample k continues sample k's conversation (its answer as the assistant message, then
    the next user prompt; images stay in turn 1), as an n=1 request keyed by the whole conversation, so
    every turn is cached and resumed on its own and identical (greedy) chains are generated once. A
    failed generation is recorded on that turn and ends the doc's conversation.
    Returns (task, doc_id) -> its turns after the first.
    """
    chains: dict[tuple[str, int], list[list[ChatMessage]]] = {}
    prompts: dict[tuple[str, int], list[str]] = {}
    params: dict[tuple[str, int], GenerationParams] = {}
    for task in tasks:
        for doc_id, (key, first, follow_ups) in task.conversations.items():
            if key in responses:
                at = (task.config.task, doc_id)
                chains[at] = [[*first, ChatMessage.of_text("assistant", r)] for r in responses[key]]
                prompts[at], params[at] = follow_ups, task.params
    turns: dict[tuple[str, int], list[Turn]] = {at: [] for at in chains}
    last = max((len(p) for p in prompts.values()), default=0)
    for t in range(last):
        pending: dict[tuple[str, int], list[GenerationRequest]] = {}
        for at, convs in chains.items():
            if t >= len(prompts[at]) or (turns[at] and turns[at][-1].error):
                continue
            pending[at] = []
            for conv in convs:
                conv.append(ChatMessage.of_text("user", prompts[at][t]))
                pending[at].append(make_request(conv, params[at], 1, seed))
        out, errors, round_stats = answerer.answer(
            [r for reqs in pending.values() for r in reqs], f"turn {t + 2} of {last + 1}"
        )
        stats.add_follow_up(round_stats)
        for at, reqs in pending.items():
            failed = next((errors[r.key] for r in reqs if r.key in errors), None)
            answers = [] if failed else [out[r.key][0] for r in reqs]
            turns[at].append(
                Turn(prompt=prompts[at][t], request_keys=[r.key for r in reqs], responses=answers, error=failed)
            )
            for conv, answer in zip(chains[at], answers, strict=False):
                conv.append(ChatMessage.of_text("assistant", answer))
    return turns


def _multi_rounds(
    answerer: Answerer,
    tasks: list[PreparedTask],
    responses: dict[str, list[str]],
    seed: int,
    stats: RequestCounts,
) -> dict[tuple[str, int], Rounds]:
    """Rounds 2.. of every ``generate_until_multi_round`` doc whose first answer came (harness.engine.multi_round)."""
    out: dict[tuple[str, int], Rounds] = {}
    for task in tasks:
        if task.config.output_type != MULTI_ROUND:
            continue
        first = {
            r.doc_id: (doc, responses[r.request_key][0])
            for r, doc in zip(task.records, task.docs, strict=True)
            if r.error is None and r.request_key in responses
        }
        chains = run_rounds(task.prompts, first, task.params, seed, _round_generator(answerer, task.config.task), stats)
        out.update({(task.config.task, doc_id): chain for doc_id, chain in chains.items()})
    return out


def _round_generator(answerer: Answerer, task: str) -> Generate:
    """The generate step of a multi-round task: each call is the next round, its progress bar labelled so."""
    rounds = itertools.count(2)

    def generate(
        requests: list[GenerationRequest],
    ) -> tuple[dict[str, list[str]], dict[str, SampleError], RequestCounts]:
        return answerer.answer(requests, f"{task} round {next(rounds)}")

    return generate
