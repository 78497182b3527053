"""The Hub's benchmark registration for a built dataset: ``eval.yaml`` at the folder's root.

The Hugging Face Hub registers a dataset repo as a benchmark by an ``eval.yaml`` at its root (the Hub
documentation, "Evaluation Results"): its ``name``, a ``description``, the ``evaluation_framework`` that runs
it, and its ``tasks``, each an ``id`` with the dataset ``config`` and ``split`` it reads. Model repos then
report scores against ``dataset id`` + ``task_id`` (``.eval_results/*.yaml``, written by
:mod:`harness.leaderboard.eval_results`), so a task id here is the harness task name a run records.

A build writes one task per bundled task that reads the dataset, and only those whose split the build
holds (a Stealth build without SQuAD has no ``vqa`` split, so no ``stealth_vqa`` task).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.data import EVAL_YAML, local_splits
from harness.disk import write_atomic
from harness.errors import HarnessError
from harness.taskspec.registry import TaskRegistry

#: The framework that runs the tasks: lmms-eval's task schema, run by ``harness eval`` or by
#: ``lmms-eval --include_path tasks/``.
FRAMEWORK = "lmms-eval"
_TASK_FIELDS = ("id", "config", "split")


def benchmark_spec(repo_id: str, name: str, description: str, splits: list[str]) -> dict[str, Any] | None:
    """The ``eval.yaml`` content for dataset ``repo_id`` built with ``splits``: the bundled tasks reading it;
    None when no task reads it (a dataset that only serves a study, as VISTA's implant set, is no benchmark)."""
    registry = TaskRegistry.discover([])
    tasks = []
    for task in registry.tasks:
        config = registry.get(task)
        split = config.test_split or "test"
        if config.dataset_path == repo_id and split in splits:
            tasks.append({"id": task, "config": config.dataset_name or "default", "split": split})
    if not tasks:
        return None
    spec = {"name": name, "description": description, "evaluation_framework": FRAMEWORK, "tasks": tasks}
    check_benchmark_spec(spec)
    return spec


def check_benchmark_spec(spec: Any) -> None:
    """Refuse, in one line, an ``eval.yaml`` without the documented fields: ``name``, ``description`` and
    ``evaluation_framework`` as text, and ``tasks`` a non-empty list of distinct ``id`` with ``config`` and
    ``split``."""
    if not isinstance(spec, dict):
        raise HarnessError(f"{EVAL_YAML}: expected a mapping, got {type(spec).__name__}")
    fields = ("name", "description", "evaluation_framework")
    problems = [f"{key} must be text" for key in fields if not _text(spec.get(key))]
    tasks = spec.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        problems.append("tasks must be a non-empty list")
    else:
        for i, task in enumerate(tasks):
            if not isinstance(task, dict) or not all(_text(task.get(f)) for f in _TASK_FIELDS):
                problems.append(f"tasks[{i}] needs id, config and split as text")
        ids = [t.get("id") for t in tasks if isinstance(t, dict)]
        if len(set(ids)) != len(ids):
            problems.append("task ids must be distinct")
    if problems:
        raise HarnessError(f"{EVAL_YAML}: " + "; ".join(problems))


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def write_benchmark_spec(folder: Path, repo_id: str, name: str, description: str) -> Path | None:
    """Write ``folder/eval.yaml`` for the splits the built folder holds (nothing when no task reads it)."""
    spec = benchmark_spec(repo_id, name, description, local_splits(folder) or [])
    if spec is None:
        return None
    path = folder / EVAL_YAML
    write_atomic(path, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    return path
