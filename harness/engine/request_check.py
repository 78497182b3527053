"""Whether a run asked what its task asks: each sample's request rebuilt from the task and compared.

Re-scoring checks a run's answers against its claims; it cannot see a run made with an edited copy of
a task (another prompt text, a shorter ``max_new_tokens``), whose answers score consistently with
themselves. This module rebuilds every sample's request from the checker's own copy of the task (the
prompt, images by pixel digest, the generation settings, ``n`` and the seed rule of
``engine/requests.make_request``) and reports the first field that differs. The settings are the ones the
checker derives (``engine/settings.resolve_settings``) from its copy of the task, the run's model family and
the flags the run declares (``--gen-kwargs``, ``--lmms-model``, ``--repeats``, ``--seed``): a declared
override is the run's claim, shown beside its figures, and the run's other records of its settings (the
task copy it records, the defaults it applied, its provenance) must agree with it. The leaderboard and
``harness score --verify`` both call :func:`check_requests`.

Without the dataset the prompt is rebuilt from each sample's own doc: its text is checked, its images
(which a sample stores only as digests) are not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.engine.loglikelihood import choice_key
from harness.engine.requests import prompt_key
from harness.engine.settings import RunFlags, TaskSettings, resolve_settings
from harness.engine.task_prompts import MULTI_ROUND, TaskPrompts
from harness.engine.tasks import (
    OpenTask,
    backend_family_of,
    config_snapshot,
    model_family_of,
    open_task,
    open_task_code,
)
from harness.hashing import derive_seed
from harness.models.base import SCORING_TYPES, GenerationParams
from harness.models.messages import ChatMessage, prompt_json
from harness.results.schema import RunResults, SampleRecord, read_run, read_samples
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry


@dataclass(frozen=True)
class RequestCheck:
    """How a task's submitted requests compare with the ones the checker's copy of the task builds."""

    task: str
    checked: int  # samples whose request was rebuilt
    differing: int  # of them, samples whose prompt, key, seed or answer count differ
    first: str | None  # the first differing field, as one line
    images_checked: bool  # False without the dataset: images are compared by digest only with it

    @property
    def modified(self) -> bool:
        """Whether the run asked something its task does not (it is then never ``verified``)."""
        return self.first is not None


def first_difference(submitted: Any, expected: Any, path: str = "") -> str | None:
    """The path of the first place where two JSON values differ (None when equal), with both values."""
    if isinstance(submitted, dict) and isinstance(expected, dict):
        for key in sorted(set(submitted) | set(expected)):
            if key not in submitted or key not in expected:
                return f"{path}.{key}: {'missing' if key not in submitted else 'not expected'}"
            found = first_difference(submitted[key], expected[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(submitted, list) and isinstance(expected, list):
        for i, (a, b) in enumerate(zip(submitted, expected, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(submitted) != len(expected):
            return f"{path}: {len(submitted)} item(s), expected {len(expected)}"
        return None
    if isinstance(submitted, str) and isinstance(expected, str) and submitted != expected:
        at = next(
            (i for i, (a, b) in enumerate(zip(submitted, expected, strict=False)) if a != b),
            min(len(submitted), len(expected)),
        )
        return f"{path}: from character {at}, submitted {_short(submitted[at:])}, expected {_short(expected[at:])}"
    if submitted != expected or type(submitted) is not type(expected):
        return f"{path}: submitted {_short(submitted)}, expected {_short(expected)}"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _expected_prompt(prompts: TaskPrompts, record: SampleRecord, doc: dict[str, Any] | None) -> Any:
    """The prompt the task builds for the sample's doc (the dataset's, else the sample's own, its images
    then taken as submitted); None when the task cannot build it from what there is."""
    if doc is not None:
        return prompt_json(prompts.build_messages(doc))
    if prompts.config.doc_to_messages is not None or prompts.config.num_fewshot:
        return None  # needs the dataset's images or its other docs
    images = []
    for message in record.prompt:
        content = message.get("content")
        for item in content if isinstance(content, list) else []:
            if isinstance(item, dict) and item.get("type") == "image":
                images.append(item.get("url", item.get("image")))
    return prompt_json([ChatMessage.user(prompts.text(record.doc), images)])  # images: their recorded digests


def _sample_difference(
    prompts: TaskPrompts,
    record: SampleRecord,
    doc: dict[str, Any] | None,
    params: GenerationParams,
    n: int,
    base_seed: int,
) -> str | None:
    """The first field of one sample's request that differs from the rebuilt one."""
    try:
        expected = _expected_prompt(prompts, record, doc)
    except Exception as exc:  # the task's code cannot build this doc's prompt: the run's cannot be its own
        return f"prompt: this copy of the task cannot build it ({type(exc).__name__}: {exc})"
    prompt = record.prompt if expected is None else expected
    found = None if expected is None else first_difference(record.prompt, expected, "prompt")
    if found:
        return found
    if prompts.config.output_type in SCORING_TYPES:
        key = choice_key(prompt, prompts.continuations(doc if doc is not None else record.doc))
        seed = None
    else:
        key = prompt_key(prompt, params, n)
        seed = derive_seed(base_seed, key)
        # a multi-round doc's responses are its rounds' results (as many as its doc_to_text made), not n answers
        if record.error is None and prompts.config.output_type != MULTI_ROUND and len(record.responses) != n:
            return f"responses: {len(record.responses)} answer(s), the task asks n={n}"
    if record.request_key != key:
        return (
            f"request_key: submitted {record.request_key!r}, expected {key!r} (the generation settings or n "
            "differ from the task's)"
        )
    if record.seed != seed:
        return f"seed: submitted {record.seed!r}, expected {seed!r} (sha256(base_seed:request_key))"
    return None


#: The keys of a task's YAML that shape its requests' settings (``resolve_settings`` reads them).
SETTINGS_KEYS = ("generation_kwargs", "model_specific_generation_kwargs", "repeats", "fewshot_delimiter")


def _plain_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def settings_difference(config: TaskConfig, run: RunResults, expected: TaskSettings) -> str | None:
    """The first place the run's own record of its settings disagrees with the settings the checker derives
    from its copy of the task and the run's declared flags: the copy of the task the run records
    (``configs``), the defaults it says it applied, and the settings its provenance says it used. Each is a
    claim the run makes beside its samples; an override edited into one of them after the fact leaves the
    others saying otherwise."""
    task = config.task
    ours, theirs = _plain_json(config_snapshot(config)), run.configs.get(task, {})
    for key in SETTINGS_KEYS:
        found = first_difference(theirs.get(key), ours.get(key), f"configs.{task}.{key}")
        if found:
            return f"{found} (the run's copy of the task sets other generation settings)"
    recorded = run.config.applied_defaults.get(task, {})
    found = first_difference(_plain_json(recorded), _plain_json(expected.applied_defaults), "applied_defaults")
    if found:
        return f"config {found}"
    claimed = run.provenance.generation.get(task)
    if claimed is None:
        return "provenance generation: missing (the run does not record the settings it used)"
    found = first_difference(claimed.model_dump(), expected.requests.model_dump(), "generation")
    return f"provenance {found}" if found else None


def expected_settings(config: TaskConfig, run: RunResults) -> TaskSettings:
    """The settings a run of ``config``'s task must have used: the one resolution (``resolve_settings``) of
    the checker's copy of the task for the run's model family, under the flags the run declares."""
    return resolve_settings(config, backend_family_of(run), RunFlags.of_run(run.config))


def check_requests(
    config: TaskConfig,
    records: Sequence[SampleRecord],
    run: RunResults,
    opened: OpenTask | None = None,
) -> RequestCheck:
    """Rebuild each sample's request from ``config`` (``opened``: the task opened over the checker's copy
    of the dataset, when it holds one) and the run's declared flags, and compare it with the submitted one;
    the run's own record of its settings is compared first (:func:`settings_difference`)."""
    expected = expected_settings(config, run)
    prompts = opened.prompts if opened is not None else open_task_code(config, expected.prompt_family).prompts
    docs = opened.docs if opened is not None else None
    first = settings_difference(config, run, expected)
    checked = differing = 0
    for record in records:
        if record.error is not None and not record.prompt:
            continue  # a doc the run could not build a prompt for: counted as an error by the scoring
        doc = None
        if docs is not None:
            if not 0 <= record.doc_id < len(docs):
                continue  # a doc id the dataset lacks: the doc check reports it
            doc = docs[record.doc_id]
        checked += 1
        found = _sample_difference(prompts, record, doc, expected.params, expected.n, run.config.seed)
        if found:
            differing += 1
            first = first or f"doc {record.doc_id}: {found}"
    return RequestCheck(
        task=config.task, checked=checked, differing=differing, first=first, images_checked=docs is not None
    )


def check_run_requests(run_dir: Path, registry: TaskRegistry, data_dir: Path | None = None) -> list[RequestCheck]:
    """``harness score --verify``: each task of a saved run checked against ``registry``'s copy of it (with
    the dataset from ``data_dir`` when given, else from the samples' own docs)."""
    run = read_run(run_dir)
    family = model_family_of(run)
    checks = []
    for task in run.configs:
        config = registry.get(task)
        opened = open_task(config, family, data_dir) if data_dir is not None else None
        checks.append(check_requests(config, read_samples(run_dir, task), run, opened))
    return checks


def claims_difference(
    task: str,
    claimed: RunResults,
    claimed_samples: Sequence[SampleRecord],
    rescored: RunResults,
    rescored_samples: Sequence[SampleRecord],
) -> str | None:
    """The first claim of a task that its own answers, scored again, do not give: a sample's metrics (an
    answer edited after scoring), then a task figure; None when every claim holds. Scoring is seeded
    (``engine/scoring_pass``), so an honest run's claims come out identical."""
    for before, after in zip(claimed_samples, rescored_samples, strict=True):
        found = first_difference(_plain_json(before.metrics), _plain_json(after.metrics), "metrics")
        if found and _canonical(before.metrics) != _canonical(after.metrics):
            return f"doc {before.doc_id}: {found} (the answers give other scores than the sample claims)"
    ours, theirs = claimed.results.get(task, {}), rescored.results.get(task, {})
    if _canonical(ours) != _canonical(theirs):
        found = first_difference(_plain_json(ours), _plain_json(theirs), "results")
        return f"{found} (the samples give another figure than the run claims)"
    return None


def _canonical(value: Any) -> str:
    """A JSON value as comparable text (NaN equals NaN, 1 and 1.0 stay apart as the files write them)."""
    return json.dumps(value, sort_keys=True, default=str)
