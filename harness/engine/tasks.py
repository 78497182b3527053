"""Opening a task: registry -> config -> its code (prompting and scoring, for one model family) -> its
dataset's processed docs.

``harness eval``, ``harness score`` (and ``--verify``), the audits, the attacks and the leaderboard's
re-scoring open tasks here and nowhere else: each reads the same docs (``process_docs`` applied) that the
run's prompts were built from, and runs the task's code in one module scope of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.data import LoadedDataset, load_task_dataset, local_copies_for_task_code
from harness.engine.fewshot import FewShotSampler, fewshot_docs
from harness.engine.task_prompts import TaskPrompts
from harness.engine.task_scoring import TaskScorer
from harness.results.schema import RunResults
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry
from harness.taskspec.yaml_loader import ModuleScope

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskCode:
    """A task's code for one model family, checked and executed afresh in one module scope of its own: how
    its docs become prompts and how its answers are scored."""

    config: TaskConfig
    prompts: TaskPrompts
    scorer: TaskScorer


@dataclass(frozen=True)
class OpenTask(TaskCode):
    """A task ready to build prompts and score: its code and its processed docs."""

    dataset: LoadedDataset
    docs: Any  # datasets.Dataset (or what the task's process_docs returns)


def open_task_code(config: TaskConfig, family: str | None) -> TaskCode:
    """A task's code without its dataset, for a caller that holds the docs already (saved samples carry
    theirs) or only checks the task; a configuration mistake fails here, in one line."""
    modules = ModuleScope()
    prompts = TaskPrompts(config, family, modules)
    return TaskCode(config, prompts, TaskScorer(config, prompts, modules))


def open_task(
    task: str | TaskConfig,
    family: str | None,
    data_dir: Path | None = None,
    include_paths: Sequence[str | Path] = (),
    registry: TaskRegistry | None = None,
    loaded: LoadedDataset | None = None,
) -> OpenTask:
    """Open ``task`` (a name looked up in ``registry``, else in the bundled tasks plus ``include_paths``; or
    a config the caller already holds, such as a server's version-checked copy) for ``family``, with its
    dataset read from ``data_dir`` unless ``loaded`` already holds it."""
    config = task if isinstance(task, TaskConfig) else (registry or TaskRegistry.discover(include_paths)).get(task)
    code = open_task_code(config, family)
    prompts = code.prompts
    dataset = loaded or load_task_dataset(config, data_dir)
    with local_copies_for_task_code(config.source.parent, data_dir):
        docs = prompts.process_docs(dataset.docs)
    if config.num_fewshot:
        prompts.fewshot = FewShotSampler(config, prompts, fewshot_docs(config, prompts, data_dir, docs))
    return OpenTask(config, prompts, code.scorer, dataset, docs)


def open_run_task(
    run: RunResults, task: str, data_dir: Path | None, include_paths: Sequence[str | Path] = ()
) -> OpenTask:
    """A task of a saved run, opened for the run's model family from the bundled tasks plus
    ``include_paths`` (what :func:`run_include_paths` chose, never the run's own by default)."""
    return open_task(task, model_family_of(run), data_dir, include_paths)


def config_snapshot(config: TaskConfig) -> dict[str, Any]:
    """A task's resolved YAML as a run records it (``results.json`` ``configs``), with ``!function``
    references written as ``!function name`` and the file it came from."""

    def plain(value: Any) -> Any:
        if hasattr(value, "yaml_dir") and hasattr(value, "name"):
            return f"!function {value.name}"
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return {**plain(config.raw), "source": str(config.source)}


def run_include_paths(
    run: RunResults, run_dir: Path, given: Sequence[str | Path], trust_run: bool = False
) -> list[str]:
    """The task folders to score a saved run with: the bundled tasks plus the folders the user names.

    A run folder may come from anyone, and a task folder holds code (``utils.py``), so the include paths
    a run records are provenance only: when they differ from ``given``, one warning says so and they are
    not used. ``trust_run`` (``--trust-run-include-paths``) adds them, with a warning naming them."""
    chosen = [str(p) for p in given]
    resolved = {str(Path(p).resolve()) for p in given}
    recorded = [p for p in run.config.include_paths if p not in resolved]
    if not recorded:
        return chosen
    if trust_run:
        log.warning("%s: trusting the run's include paths: task code is imported from %s", run_dir, ", ".join(recorded))
        return [*chosen, *recorded]
    log.warning(
        "%s: the run was made with include path(s) %s; they are not used (a run folder never runs its "
        "own task code): pass --include-path for folders you trust, or --trust-run-include-paths",
        run_dir,
        ", ".join(recorded),
    )
    return chosen


def model_family_of(run: RunResults) -> str | None:
    """The lmms-eval family a run's prompts were built for (it picks ``lmms_eval_specific_kwargs``): the
    ``--lmms-model`` it reproduced, else its model's family."""
    return run.config.lmms_model or backend_family_of(run)


def backend_family_of(run: RunResults) -> str | None:
    """The lmms-eval family of a run's model, as its backend named it (``Backend.model_family``, which picks
    the default answer length of a task that sets none), else as the model's type maps to one."""
    model = run.provenance.model
    if model.model_family:
        return model.model_family
    from harness.models.family import lmms_family

    return lmms_family(model.model_type) if model.model_type else None
