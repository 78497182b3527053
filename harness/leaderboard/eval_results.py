"""A run's scores in the Hub's own format: ``.eval_results/*.yaml`` in a model repo.

The Hugging Face Hub shows a model's scores on its page, and on each benchmark dataset's leaderboard, from
YAML files in the model repo's ``.eval_results/`` folder (the Hub documentation, "Evaluation Results"): a
list of entries, each a ``dataset`` (``id``, ``task_id`` as the dataset's ``eval.yaml`` names it, optionally
the ``revision``), a ``value``, and optionally a ``date``, a ``source`` and ``notes``. huggingface_hub's
``EvalResultEntry`` is the entry, and its ``eval_result_entries_to_yaml`` / ``parse_eval_result_entries``
write and read the files, so what is written here is what the Hub client reads.

One entry per task of the run whose dataset is a Hub id: the task's first metric (its headline, as the
summary table lists it) under its first filter. Whether the harness leaderboard verified the figure is said
per entry: a verified one links the leaderboard's page as its ``source``; every entry's ``notes`` say which
metric it is and what the leaderboard found (or that the run was not submitted to one). The Hub's own
``verified`` badge needs its ``verifyToken``, which only the Hub's evaluation jobs issue; none is written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness.results.metric_key import MetricKey
from harness.results.schema import RunResults

FOLDER = ".eval_results"
VERIFIED = "verified"


def headline_key(run: RunResults, task: str) -> MetricKey | None:
    """The task's headline figure: its first ``metric_list`` metric, under the first filter the run reports
    it with (None when the run has no number for it)."""
    metrics = run.configs.get(task, {}).get("metric_list") or []
    first = metrics[0].get("metric") if metrics and isinstance(metrics[0], dict) else None
    for key, value in run.results.get(task, {}).items():
        parsed = MetricKey.parse(key)
        if parsed is not None and parsed.metric == first and not parsed.is_stderr and _number(value):
            return parsed
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def eval_result_entries(
    run: RunResults, checks: Mapping[str, str] | None = None, page: str | None = None
) -> dict[str, list[Any]]:
    """File name -> huggingface_hub ``EvalResultEntry`` list: one file per benchmark dataset, one entry per
    task. ``checks`` are the leaderboard's per-task statuses for this run and ``page`` its page there."""
    from huggingface_hub import EvalResultEntry

    files: dict[str, list[Any]] = {}
    for task in sorted(run.results):
        key = headline_key(run, task)
        dataset_id = run.configs.get(task, {}).get("dataset_path")
        if key is None or not isinstance(dataset_id, str) or dataset_id.count("/") != 1:
            continue
        fingerprint = run.provenance.datasets.get(task)
        status = (checks or {}).get(task)
        verified = status == VERIFIED and page is not None
        found = (
            "verified by the harness leaderboard (re-scored from the samples with its own task code)"
            if verified
            else f"not verified: the harness leaderboard found it {status}"
            if status
            else "self-reported: not submitted to a harness leaderboard"
        )
        entry = EvalResultEntry(
            dataset_id=dataset_id,
            task_id=task,
            value=run.results[task][str(key)],
            dataset_revision=fingerprint.revision if fingerprint is not None else None,
            date=run.provenance.started_at,
            source_url=page if verified else None,
            source_name="harness leaderboard" if verified else None,
            notes=f"{key.metric} ({key.filter} filter); {found}",
        )
        files.setdefault(f"{dataset_id.split('/')[1]}.yaml", []).append(entry)
    return files


def write_eval_results(
    run_dir: Path, root: Path, checks: Mapping[str, str] | None = None, page: str | None = None
) -> list[Path]:
    """Write ``root/.eval_results/<dataset>.yaml`` for the run in ``run_dir``; the files written."""
    from huggingface_hub import eval_result_entries_to_yaml

    from harness.results.schema import read_run

    folder = root / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, entries in eval_result_entries(read_run(run_dir), checks, page).items():
        path = folder / name
        path.write_text(yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False), encoding="utf-8")
        written.append(path)
    return written
