"""One task of ``harness eval`` before generation: its docs -> a sample record and a request each.

A doc that cannot become a prompt (a row that does not decode, task code failing on it) is that sample's
``bad input`` error; every other doc gets its generation request (``engine/requests.make_request``), or for
``multiple_choice`` and ``loglikelihood`` tasks its scoring request, and for multi-turn tasks the follow-up
prompts its conversation continues with.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data import LoadedDataset
from harness.engine.limits import Limit, docs_to_run
from harness.engine.loglikelihood import choice_request
from harness.engine.requests import make_request
from harness.engine.settings import RunFlags, TaskSettings, resolve_settings
from harness.engine.task_prompts import BadInputError, TaskPrompts, strip_images
from harness.engine.task_scoring import TaskScorer
from harness.engine.tasks import open_task
from harness.errors import UnsupportedRequestError
from harness.hashing import stable_hash, to_jsonable
from harness.models.base import SCORING_TYPES, Backend, GenerationParams, GenerationRequest
from harness.models.loglikelihood import LoglikelihoodRequest
from harness.models.messages import ChatMessage, prompt_json
from harness.results.sample_error import SampleError
from harness.results.schema import SampleRecord
from harness.taskspec.config import TaskConfig


@dataclass
class PreparedTask:
    """A task opened for the run's model, with a record per doc (its request key, or why it has none), the
    docs they stand for, and the requests to answer."""

    config: TaskConfig
    prompts: TaskPrompts
    scorer: TaskScorer
    settings: TaskSettings
    fingerprint: dict[str, Any]
    records: list[SampleRecord] = field(default_factory=list)
    docs: list[dict[str, Any]] = field(default_factory=list)
    requests: list[GenerationRequest] = field(default_factory=list)
    # multi-turn tasks: doc_id -> (turn-1 request key, turn-1 messages, follow-up user prompts)
    conversations: dict[int, tuple[str, list[ChatMessage], list[str]]] = field(default_factory=dict)
    scoring: list[LoglikelihoodRequest] = field(default_factory=list)  # multiple_choice tasks

    @property
    def params(self) -> GenerationParams:
        """The generation settings of the task's requests (its turns and rounds use them too)."""
        return self.settings.params


def prepare_task(
    config: TaskConfig,
    backend: Backend,
    flags: RunFlags,
    data_dir: Path | None,
    limit: Limit | None,
    loaded: LoadedDataset | None = None,
) -> PreparedTask:
    """``config`` opened for ``backend`` under the run's ``flags`` (settings from the one resolution), over
    its dataset (``loaded``, else read from ``data_dir``), cut to ``limit``, each doc made a record."""
    if not backend.supports(config.output_type):
        raise UnsupportedRequestError(f"backend cannot serve output_type {config.output_type} (task {config.task})")
    settings = resolve_settings(config, backend.model_family, flags)
    opened = open_task(config, settings.prompt_family, data_dir, loaded=loaded)
    task = PreparedTask(config, opened.prompts, opened.scorer, settings, opened.dataset.fingerprint)
    for doc_id, doc in _doc_rows(opened.docs, limit):
        _add_doc(task, doc_id, doc, flags.seed)
    return task


def _doc_rows(docs: Any, limit: Limit | None) -> Iterator[tuple[int, dict[str, Any] | Exception]]:
    """Rows of a dataset; a row that fails to decode (a corrupt image) is yielded as its exception."""
    total = docs_to_run(len(docs), limit)
    for i in range(total):
        try:
            yield i, docs[i]
        except Exception as exc:  # datasets decodes images on access
            yield i, exc


def _add_doc(task: PreparedTask, doc_id: int, doc: dict[str, Any] | Exception, seed: int) -> None:
    """One doc's record, and its request (generation or scoring) unless the doc is bad input."""
    config, prompts = task.config, task.prompts
    if isinstance(doc, Exception):
        error = SampleError("bad input", f"cannot decode row: {type(doc).__name__}: {doc}")
        task.records.append(SampleRecord(task=config.task, doc_id=doc_id, doc_hash="", doc={}, error=error))
        task.docs.append({})
        return
    base = {"task": config.task, "doc_id": doc_id, "doc_hash": stable_hash(doc), "doc": to_jsonable(strip_images(doc))}
    task.docs.append(doc)
    try:
        target = prompts.target(doc)
        messages = prompts.build_messages(doc)
        follow_ups = prompts.follow_ups(doc)
        scored = choice_request(messages, prompts.continuations(doc)) if config.output_type in SCORING_TYPES else None
    except BadInputError as exc:
        task.records.append(SampleRecord(**base, error=SampleError("bad input", str(exc))))
        return
    asked = {"target": to_jsonable(target), "prompt": prompt_json(messages)}
    if scored is not None:
        task.scoring.append(scored)
        task.records.append(SampleRecord(**base, **asked, request_key=scored.key))
        return
    request = make_request(messages, task.settings.params, task.settings.n, seed)
    task.requests.append(request)
    task.records.append(SampleRecord(**base, **asked, request_key=request.key, seed=request.seed))
    if follow_ups:
        task.conversations[doc_id] = (request.key, messages, follow_ups)
