"""Preflight: every model and every task of a run checked before the first model loads.

A run of several models used to find the second model's missing extra, a missing API key or a dead server
only after the first model had run to the end. :func:`preflight` checks all of them first, each at the cost
of a lookup (an import spec, a folder, the Hub cache, one short request to a server), and stops the run with
one line naming every problem at once. It also says how much work is coming (:class:`Plan`), so a long run
is expected to be long.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from harness.data import LoadedDataset
from harness.engine.limits import docs_to_run
from harness.engine.runner import EvalOptions, validate_tasks
from harness.engine.settings import resolve_settings
from harness.errors import HarnessError
from harness.hub import offline_reason
from harness.models.base import SCORING_TYPES, backend_factory, split_spec
from harness.models.hf import check_model_args
from harness.models.openai_api import MISSING_OPENAI
from harness.models.source import load_error, local_folder
from harness.models.vllm import MISSING_VLLM
from harness.taskspec.registry import TaskRegistry

log = logging.getLogger(__name__)

#: How long a server gets to answer the one ``GET /models`` preflight sends it.
SERVER_TIMEOUT_S = 3.0
#: The module each built-in backend imports beyond the core install, and what a run without it is told.
BACKEND_MODULES: dict[str, tuple[str, str]] = {"openai": ("openai", MISSING_OPENAI), "vllm": ("vllm", MISSING_VLLM)}
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


class PreflightError(HarnessError):
    """One or more models or tasks of a run cannot be served; the message names every one."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        if len(problems) == 1:
            super().__init__(problems[0])
        else:
            super().__init__(f"{len(problems)} problems, nothing was run: " + "; ".join(problems))


@dataclass(frozen=True)
class TaskLoad:
    """The work one task asks of each model: its prompts, the samples per prompt and the answer length."""

    task: str
    prompts: int
    samples_per_prompt: int
    max_new_tokens: int | None  # None for a task scored from given choices (no generation)
    multi_turn: bool

    @property
    def samples(self) -> int:
        """Completions to generate (scored choices: one per prompt)."""
        return self.prompts * self.samples_per_prompt

    @property
    def tokens(self) -> int:
        """New tokens at most (the first turn only for a multi-turn task)."""
        return self.samples * (self.max_new_tokens or 0)


@dataclass(frozen=True)
class Plan:
    """The run's work per model, estimated from the datasets and generation settings before anything loads."""

    models: int
    tasks: tuple[TaskLoad, ...]

    def describe(self) -> str:
        """One line: requests and new tokens per model and in all."""
        samples = sum(t.samples for t in self.tasks)
        tokens = sum(t.tokens for t in self.tasks)
        per_task = ", ".join(
            f"{t.task}: {t.prompts} x {t.samples_per_prompt}"
            + (f" of up to {t.max_new_tokens:,} tokens" if t.max_new_tokens else " scored")
            + (" (first turn)" if t.multi_turn else "")
            for t in self.tasks
        )
        every = f"; {self.models} models: {samples * self.models:,} samples" if self.models > 1 else ""
        return (
            f"preflight ok: per model {samples:,} samples, up to {tokens:,} new tokens ({per_task}){every}; "
            "answers already in the response store are not generated again"
        )


def model_problems(spec: str, model_args: dict[str, str]) -> list[str]:
    """What stops ``spec`` from loading, found without loading it: an unknown backend, a missing extra, a
    missing folder, a Hub id neither cached nor reachable, a missing API key, a server that does not answer."""
    try:
        prefix, name = split_spec(spec)
    except HarnessError as exc:
        return [str(exc)]
    module, missing = BACKEND_MODULES.get(prefix, ("", ""))
    if module and importlib.util.find_spec(module) is None:
        return [f"{spec}: {missing}"]
    if prefix in {"hf", "tiny"}:
        try:
            check_model_args(model_args)
        except HarnessError as exc:
            return [f"{spec}: {exc}"]
    if prefix == "tiny":
        return _tiny_problems(spec, name)
    if prefix in {"hf", "vllm"}:
        return _weights_problems(name)
    if prefix == "openai":
        return _server_problems(spec, model_args)
    try:
        backend_factory(prefix)  # a plug-in: its module imports
    except HarnessError as exc:
        return [str(exc)]
    return []


def _tiny_problems(spec: str, name: str) -> list[str]:
    """A tiny chat model the harness can build (it is built, once, when it loads)."""
    from harness.tiny_models import RECIPES, require_chat_arch

    try:
        require_chat_arch(name)
    except HarnessError as exc:
        return [str(exc)]
    return (
        [] if name in RECIPES else [f"{spec}: no tiny chat model {name!r} (tiny models: {', '.join(sorted(RECIPES))})"]
    )


def _weights_problems(name: str) -> list[str]:
    """A local folder that exists with its ``config.json``, or a Hub id in the Hub cache or on a reachable Hub,
    in the words loading it would use."""
    try:
        folder = local_folder(name)
    except HarnessError as exc:
        return [str(exc)]
    if folder is not None:
        return [] if (folder / "config.json").is_file() else [f"not a model folder: {name} has no config.json"]
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(name, "config.json"), str) or offline_reason() is None:
        return []
    return [str(load_error(name, None, LookupError()))]


def _server_problems(spec: str, model_args: dict[str, str]) -> list[str]:
    """An OpenAI-compatible server: its ``--model-args`` (making the client sends nothing), the API key the
    official API needs, and one ``GET /models``."""
    from harness.models.base import create_backend

    try:
        create_backend(spec, model_args)
    except HarnessError as exc:
        return [str(exc)]
    base_url = (model_args.get("base_url") or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL).rstrip("/")
    api_key = model_args.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not api_key and base_url == OPENAI_DEFAULT_URL:
        return [
            f"{spec}: no API key for {base_url} (set OPENAI_API_KEY, or --model-args base_url=... for a local server)"
        ]
    # urllib reads a URL's user:password@ as part of the host name; the probe asks the host without it
    parts = urllib.parse.urlsplit(base_url)
    host = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    request = urllib.request.Request(f"{host}/models", headers={"Authorization": f"Bearer {api_key or 'none'}"})
    try:
        with urllib.request.urlopen(request, timeout=SERVER_TIMEOUT_S) as response:
            served = _served_models(response.read(1 << 20))
    except urllib.error.HTTPError as exc:
        if exc.code in {401, 403}:
            return [f"{spec}: {base_url} refused the API key (HTTP {exc.code})"]
        return []  # it answers; some servers have no /models
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return [f"{spec}: no server answers at {base_url} within {SERVER_TIMEOUT_S:g} s ({reason})"]
    name = spec.partition(":")[2]
    if served and name not in served:
        return [f"{spec}: {base_url} does not serve {name!r} (it serves {', '.join(sorted(served)[:5])})"]
    return []


def _served_models(body: bytes) -> set[str]:
    """The model ids of a ``/models`` answer, empty when the answer is not the API's list."""
    try:
        data = json.loads(body).get("data")
        return {str(m["id"]) for m in data if isinstance(m, dict) and "id" in m} if isinstance(data, list) else set()
    except (ValueError, AttributeError, TypeError):
        return set()


def task_loads(opts: EvalOptions, datasets: dict[str, LoadedDataset]) -> tuple[TaskLoad, ...]:
    """Each task's prompts (``--limit`` applied), samples per prompt and answer length."""
    from harness.engine.task_prompts import MULTI_ROUND

    registry = TaskRegistry.discover(opts.include_paths)
    loads = []
    for task, loaded in datasets.items():
        config = registry.get(task)
        rows = len(loaded.docs)
        prompts = docs_to_run(rows, opts.limit)
        scored = config.output_type in SCORING_TYPES
        settings = resolve_settings(config, None, opts.flags)  # a model family's own default comes at its load
        tokens = None if scored else settings.params.max_new_tokens
        n = 1 if scored else settings.n
        loads.append(TaskLoad(task, prompts, n, tokens, config.output_type == MULTI_ROUND))
    return tuple(loads)


def preflight(
    specs: Sequence[str],
    model_args: dict[str, str],
    opts: EvalOptions,
    per_model: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, LoadedDataset], Plan]:
    """Check every model and every task (its config and its dataset with the split), then return the
    datasets and the :class:`Plan`; a :class:`PreflightError` names every problem found."""
    problems: list[str] = []
    for spec in dict.fromkeys(specs):
        problems.extend(model_problems(spec, model_args))
    datasets: dict[str, LoadedDataset] = {}
    try:
        datasets = validate_tasks(opts)
    except HarnessError as exc:
        if not problems:
            raise  # the tasks' own error, as it has always read
        problems.append(str(exc))
    if problems:
        raise PreflightError(problems)
    return datasets, Plan(len(specs), task_loads(opts, datasets))
