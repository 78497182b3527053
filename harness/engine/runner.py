"""``harness eval``: tasks x model -> requests -> answers (store, backend) -> scored samples -> the run.

The steps live where they are named: ``task_requests`` (each task's docs -> records and requests),
``generation`` (answers from the store or the backend, turns and rounds), ``scoring_pass`` (the one scoring
pass), ``run_folder`` (the folder the run is written to); ``harness score`` is ``rescore``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.data import BuildHint, LoadedDataset, load_task_datasets
from harness.engine.baseline import check_source, compare_all
from harness.engine.generation import Answerer, Answers, answer_tasks
from harness.engine.limits import Limit
from harness.engine.lmms_args import aggregation_args
from harness.engine.lmms_models import check_lmms_model
from harness.engine.run_folder import check_output, new_run_folder, run_reports, unsaved
from harness.engine.scoring_pass import ScoredRun, score_run_tasks
from harness.engine.settings import RunFlags, resolve_settings
from harness.engine.store import ResponseStore
from harness.engine.task_requests import PreparedTask, prepare_task
from harness.engine.tasks import config_snapshot, open_task_code
from harness.errors import HarnessError
from harness.models.base import Backend
from harness.provenance import environment
from harness.results.schema import (
    DatasetFingerprint,
    ModelInfo,
    Provenance,
    RunConfig,
    RunResults,
    RunWriteError,
    SampleRecord,
    write_run,
)
from harness.taskspec.registry import TaskRegistry


@dataclass(frozen=True)
class EvalOptions:
    """Everything ``harness eval`` takes besides the model."""

    tasks: list[str]
    include_paths: list[str] = field(default_factory=list)
    data_dir: Path | None = None
    limit: Limit | None = None  # first N docs of each task, or a fraction of them (lmms-eval's reading)
    seed: int = 0
    batch_size: int = 1
    output: Path | None = None
    store_path: Path | None = None
    use_cache: bool = True
    refresh: bool = False
    gen_overrides: dict[str, Any] = field(default_factory=dict)
    repeats: int | None = None
    show_progress: bool = True
    lmms_model: str | None = None  # the lmms-eval model class whose behaviour the run reproduces
    baseline: str | None = None  # a run folder or samples file to compare each task with (paired t-test)
    build_hint: BuildHint | None = None  # how a missing dataset is built (the command line passes the builders')

    @property
    def flags(self) -> RunFlags:
        """The options that shape the run's requests (the run records them in its config)."""
        return RunFlags(dict(self.gen_overrides), self.lmms_model, self.repeats, self.seed)


def evaluate(
    backend: Backend,
    model_spec: str,
    opts: EvalOptions,
    model_args: dict[str, str] | None = None,
    datasets: dict[str, LoadedDataset] | None = None,
) -> tuple[RunResults, dict[str, list[SampleRecord]], Path | None]:
    """Run tasks on a backend; write the run folder when ``opts.output`` is set.

    ``datasets`` may carry datasets already loaded by :func:`validate_tasks`."""
    started = time.time()
    check_output(opts.output)
    registry = TaskRegistry.discover(opts.include_paths)
    prepared = [
        prepare_task(registry.get(name), backend, opts.flags, opts.data_dir, opts.limit, (datasets or {}).get(name))
        for name in registry.expand(opts.tasks)
    ]
    store = ResponseStore(opts.store_path if opts.use_cache else None, read=not opts.refresh)
    try:
        answers = answer_tasks(Answerer(backend, store, opts.batch_size, opts.show_progress), prepared, opts.seed)
    finally:
        store.close()
    run_dir, failure = new_run_folder(opts.output, model_spec, started)
    args = aggregation_args(
        run_dir,
        model_spec,
        opts.tasks,
        limit=opts.limit,
        seed=opts.seed,
        batch_size=opts.batch_size,
        gen_kwargs=opts.gen_overrides,
        include_paths=opts.include_paths,
    )
    scored = score_run_tasks(registry, opts.tasks, {t.config.task: answers.scoring_input(t) for t in prepared}, args)
    configs = {t.config.task: t.config for t in prepared}
    compared = compare_all(opts.baseline, configs, scored.samples, scored.results) if opts.baseline else {}
    reports, failure = run_reports({t.config.task: t.scorer for t in prepared}, scored.samples, run_dir, failure)
    provenance = _provenance(backend, opts, prepared, scored, answers, started)
    run = _run_results(model_spec, model_args, opts, prepared, scored, compared, reports, provenance)
    if opts.output is not None:
        try:
            if failure is not None:
                raise failure
            assert run_dir is not None
            write_run(run_dir, run, scored.samples)
        except RunWriteError as exc:
            store_path = opts.store_path if opts.use_cache else None
            raise unsaved(exc, run_dir or opts.output, run, scored.samples, opts.include_paths, store_path) from None
    return run, scored.samples, run_dir


def _run_results(
    model_spec: str,
    model_args: dict[str, str] | None,
    opts: EvalOptions,
    prepared: list[PreparedTask],
    scored: ScoredRun,
    compared: dict[str, Any],
    reports: dict[str, dict[str, Any]],
    provenance: Provenance,
) -> RunResults:
    """The run as ``results.json`` records it: each task's figures, copy and size, the run's flags."""
    return RunResults(
        results=scored.results,
        groups=scored.groups,
        group_subtasks=scored.group_subtasks,
        configs={t.config.task: config_snapshot(t.config) for t in prepared},
        versions={t.config.task: t.config.version for t in prepared},
        n_samples={
            t.config.task: {"original": t.fingerprint["num_rows"], "effective": len(t.records)} for t in prepared
        },
        higher_is_better={
            t.config.task: {m.metric: m.higher_is_better for m in t.config.metric_list} for t in prepared
        },
        counts=scored.counts,
        reports=reports,
        intervals=scored.intervals,
        baseline=compared,
        config=RunConfig(
            model=model_spec,
            model_args=model_args or {},
            batch_size=opts.batch_size,
            limit=opts.limit,
            seed=opts.seed,
            tasks=opts.tasks,
            include_paths=[str(Path(p).resolve()) for p in opts.include_paths],
            gen_overrides=opts.gen_overrides,
            repeats=opts.repeats,
            use_cache=opts.use_cache,
            refresh=opts.refresh,
            lmms_model=opts.lmms_model,
            baseline=opts.baseline,
            applied_defaults={
                t.config.task: t.settings.applied_defaults for t in prepared if t.settings.applied_defaults
            },
        ),
        provenance=provenance,
    )


def _provenance(
    backend: Backend,
    opts: EvalOptions,
    prepared: list[PreparedTask],
    scored: ScoredRun,
    answers: Answers,
    started: float,
) -> Provenance:
    """Where the run's figures came from: the software, the model, each dataset's fingerprint, the settings
    and seeds the requests and the scoring used, and the time and work generation took."""
    wall, gen_seconds, stats = time.time() - started, answers.seconds, answers.stats
    return Provenance(
        **environment(),
        model=ModelInfo.model_validate(backend.info()),
        datasets={t.config.task: DatasetFingerprint.model_validate(t.fingerprint) for t in prepared},
        generation={t.config.task: t.settings.requests for t in prepared},
        seeds=opts.flags.seed_policy(scored.seeds),
        started_at=datetime.fromtimestamp(started, UTC).isoformat(),
        wall_time_s=round(wall, 3),
        generation_time_s=round(gen_seconds, 3),
        throughput_samples_per_s=round(stats.generated_samples / gen_seconds, 3) if gen_seconds else None,
        requests=stats,
    )


def validate_tasks(opts: EvalOptions) -> dict[str, LoadedDataset]:
    """Check the output folder and every requested task (config, functions, generation settings) and load
    its dataset, so a mistake or a missing dataset fails before a (possibly large) model is loaded."""
    check_output(opts.output)
    check_lmms_model(opts.lmms_model)
    if opts.baseline is not None:
        check_source(opts.baseline)
    registry = TaskRegistry.discover(opts.include_paths)
    configs = []
    for name in registry.expand(opts.tasks):
        config = registry.get(name)
        open_task_code(config, opts.lmms_model)
        resolve_settings(config, None, opts.flags)  # the model's family only adds a valid default length
        configs.append(config)
    return load_task_datasets(configs, opts.data_dir, opts.build_hint)


def require_tasks(names: list[str]) -> list[str]:
    """The ``--tasks`` names, refusing an empty list in one line."""
    if not names:
        raise HarnessError("--tasks is required (comma-separated task, group or tag names)")
    return names
