"""``harness score``: a saved run's samples scored again with the task code installed here; no model loads.

The scoring pass is the one ``harness eval`` runs (``engine/scoring_pass``), so an honest run's figures come
out identical; the run's claim is kept (``run_folder.keep_originals``) before anything replaces it.
"""

from __future__ import annotations

import logging
from argparse import Namespace
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.disk import disk_problem, failed_path, is_disk_error
from harness.engine.baseline import compare_all
from harness.engine.lmms_args import aggregation_args
from harness.engine.run_folder import check_output, file_stamps, keep_originals, task_reports
from harness.engine.scoring_pass import ScoredRun, TaskScoring, score_run_tasks
from harness.engine.task_scoring import TaskScorer
from harness.engine.tasks import model_family_of, open_task, open_task_code, run_include_paths
from harness.errors import HarnessError
from harness.provenance import environment
from harness.results.schema import (
    Rescoring,
    RunResults,
    RunWriteError,
    SampleRecord,
    read_run,
    read_samples,
    write_run,
)
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry

log = logging.getLogger(__name__)


def rescoring_input(
    config: TaskConfig, model_family: str | None, records: list[SampleRecord], data_dir: Path | None
) -> TaskScoring:
    """One task's saved samples ready to score again with its scoring code; tasks whose scoring reads images
    load the dataset (``data_dir``) for them."""
    if config.process_results_use_image:
        opened = open_task(config, model_family, data_dir)
        return TaskScoring(opened.scorer, records, [opened.docs[r.doc_id] for r in records])
    return TaskScoring(open_task_code(config, model_family).scorer, records, [r.doc for r in records])


def score_run(
    run_dir: Path,
    data_dir: Path | None = None,
    output: Path | None = None,
    include_paths: Sequence[str | Path] = (),
    trust_run_include_paths: bool = False,
) -> tuple[RunResults, dict[str, list[SampleRecord]]]:
    """Recompute every per-sample metric and aggregate from saved samples; no model is loaded.

    Tasks come from the bundled tasks plus ``include_paths``; the run's recorded include paths only with
    ``trust_run_include_paths`` (:func:`harness.engine.tasks.run_include_paths`).

    The run's claim is never lost: with ``output`` (another folder) the rescored results, samples and
    reports go there and the run folder is untouched; in place, the files about to be replaced are first
    copied to ``run_dir/original/`` (once: a later score keeps that first copy). ``provenance.rescored``
    lists the files written and where the originals are."""
    run_dir = Path(run_dir)
    run = read_run(run_dir)
    dest = run_dir if output is None else Path(output)
    in_place = dest.resolve() == run_dir.resolve()
    if not in_place and (dest / "results.json").exists():
        raise HarnessError(f"--output {dest} already holds a results.json; choose an empty or new folder")
    registry = TaskRegistry.discover(run_include_paths(run, run_dir, include_paths, trust_run_include_paths))
    check_output(dest)
    inputs = _scoring_inputs(run, run_dir, registry, data_dir)
    scored = score_run_tasks(registry, run.config.tasks, inputs, _aggregation_args(run, dest))
    compared = _baseline_again(run, registry, scored)
    scorers = {task: inputs[task].scorer for task in inputs}
    originals = None
    try:
        originals = keep_originals(run_dir) if in_place else None
        updated = _rescored_run(run, run_dir, dest, scored, compared, scorers, originals)
        write_run(dest, updated, scored.samples)
    except (OSError, RunWriteError) as exc:
        if isinstance(exc, OSError) and not is_disk_error(exc):
            raise
        raise _not_written(exc, run_dir, dest, in_place, originals) from None
    return updated, scored.samples


def _scoring_inputs(
    run: RunResults, run_dir: Path, registry: TaskRegistry, data_dir: Path | None
) -> dict[str, TaskScoring]:
    """Each task of the run: its saved samples and the scorer of the task code installed here."""
    family = model_family_of(run)
    return {
        task: rescoring_input(registry.get(task), family, read_samples(run_dir, task), data_dir) for task in run.configs
    }


def _aggregation_args(run: RunResults, dest: Path) -> Namespace:
    """The ``args`` aggregations that take it get: the run's own flags, its task files written to ``dest``."""
    return aggregation_args(
        dest,
        run.config.model,
        run.config.tasks,
        limit=run.config.limit,
        seed=run.config.seed,
        batch_size=run.config.batch_size,
        gen_kwargs=run.config.gen_overrides,
        include_paths=run.config.include_paths,
    )


def _baseline_again(run: RunResults, registry: TaskRegistry, scored: ScoredRun) -> dict[str, Any]:
    """The run's ``--baseline`` comparison again, on the rescored samples; left out, with a warning, when
    the baseline cannot be read here."""
    try:
        configs = {t: registry.get(t) for t in run.configs}
        return compare_all(run.config.baseline, configs, scored.samples, scored.results) if run.config.baseline else {}
    except HarnessError as exc:
        log.warning("the baseline comparison is left out: %s", exc)
        return {}


def _rescored_run(
    run: RunResults,
    run_dir: Path,
    dest: Path,
    scored: ScoredRun,
    compared: dict[str, Any],
    scorers: dict[str, TaskScorer],
    originals: Path | None,
) -> RunResults:
    """The run with its figures scored again and the tasks' reports made again (their plots written in
    ``dest``), its provenance naming the seeds, the files about to be written and where the originals are."""
    before = file_stamps(dest)
    reports = task_reports(scorers, scored.samples, dest)
    written = sorted(
        {
            "results.json",
            *(f"samples_{t}.jsonl" for t in scored.samples),
            *(name for name, stamp in file_stamps(dest).items() if before.get(name) != stamp),
        }
    )
    rescored = Rescoring(
        **environment(),
        source=str(run_dir.resolve()),
        files=written,
        originals=None if originals is None else str(originals),
    )
    seeds = run.provenance.seeds.model_copy(update={"scoring": scored.seeds})
    return run.model_copy(
        update={
            "results": scored.results,
            "intervals": scored.intervals,
            "baseline": compared,
            "counts": scored.counts,
            "groups": scored.groups,
            "group_subtasks": scored.group_subtasks,
            "reports": reports,
            "provenance": run.provenance.model_copy(update={"seeds": seeds, "rescored": rescored}),
        }
    )


def _not_written(
    exc: OSError | RunWriteError, run_dir: Path, dest: Path, in_place: bool, originals: Path | None
) -> HarnessError:
    """The one-line error of a re-score that could not be written, saying what is left as it was."""
    problem = exc if isinstance(exc, RunWriteError) else disk_problem(failed_path(exc, dest), exc)
    kept = (
        f"the run's files as first written are in {originals}"
        if originals is not None
        else f"{run_dir} is unchanged"
        if not in_place
        else "the run's files are unchanged"
    )
    return HarnessError(f"cannot write the rescored run: {problem}; {kept}: free space and rerun harness score")
