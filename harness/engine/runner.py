"""``harness eval`` and ``harness score``: tasks x model -> requests -> store -> samples -> results."""

from __future__ import annotations

import itertools
import logging
import os
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from harness.data import BuildHint, LoadedDataset, load_task_datasets
from harness.disk import disk_problem, failed_path, is_disk_error
from harness.engine.baseline import check_source, compare_all
from harness.engine.intervals import group_interval
from harness.engine.limits import Limit, docs_to_run
from harness.engine.lmms_args import aggregation_args
from harness.engine.lmms_models import check_lmms_model
from harness.engine.loglikelihood import answer_choices, choice_request
from harness.engine.multi_round import Generate, Rounds, run_rounds
from harness.engine.progress import generation_label
from harness.engine.requests import make_request
from harness.engine.scoring_pass import TaskScoring, score_tasks, scoring_order
from harness.engine.settings import RunFlags, TaskSettings, resolve_settings
from harness.engine.store import ResponseStore
from harness.engine.task_runtime import MULTI_ROUND, BadInputError, TaskRuntime, strip_images
from harness.engine.tasks import config_snapshot, model_family_of, open_task, run_include_paths
from harness.errors import HarnessError, UnsupportedRequestError
from harness.hashing import stable_hash, to_jsonable
from harness.metrics.aggregation import pooled_stderr, weighted_mean
from harness.models.base import SCORING_TYPES, Backend, GenerationParams, GenerationRequest
from harness.models.loglikelihood import LoglikelihoodRequest
from harness.models.messages import ChatMessage, prompt_json
from harness.paths import new_run_dir
from harness.provenance import environment
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey
from harness.results.sample_error import SampleError
from harness.results.schema import (
    DatasetFingerprint,
    ModelInfo,
    Provenance,
    RequestCounts,
    Rescoring,
    RunConfig,
    RunResults,
    RunWriteError,
    SampleRecord,
    ScoredChoice,
    TaskCounts,
    Turn,
    read_run,
    read_samples,
    write_run,
)
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry
from harness.unencodable import writable

log = logging.getLogger(__name__)


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


@dataclass
class _PreparedTask:
    config: TaskConfig
    runtime: TaskRuntime
    settings: TaskSettings
    fingerprint: dict[str, Any]
    records: list[SampleRecord]
    docs: list[dict[str, Any]]
    # multi-turn tasks: doc_id -> (turn-1 request key, turn-1 messages, follow-up user prompts)
    conversations: dict[int, tuple[str, list[ChatMessage], list[str]]] = field(default_factory=dict)
    scoring: list[LoglikelihoodRequest] = field(default_factory=list)  # multiple_choice tasks

    @property
    def params(self) -> GenerationParams:
        return self.settings.params


def _doc_rows(docs: Any, limit: Limit | None) -> Iterator[tuple[int, dict[str, Any] | Exception]]:
    """Rows of a dataset; a row that fails to decode (a corrupt image) is yielded as its exception."""
    total = docs_to_run(len(docs), limit)
    for i in range(total):
        try:
            yield i, docs[i]
        except Exception as exc:  # datasets decodes images on access
            yield i, exc


def _prepare(
    config: TaskConfig, backend: Backend, opts: EvalOptions, loaded: LoadedDataset | None
) -> tuple[_PreparedTask, list[GenerationRequest]]:
    if not backend.supports(config.output_type):
        raise UnsupportedRequestError(f"backend cannot serve output_type {config.output_type} (task {config.task})")
    settings = resolve_settings(config, backend.model_family, opts.flags)
    opened = open_task(config, settings.prompt_family, opts.data_dir, loaded=loaded)
    runtime, docs = opened.runtime, opened.docs
    records: list[SampleRecord] = []
    kept_docs: list[dict[str, Any]] = []
    requests: list[GenerationRequest] = []
    conversations: dict[int, tuple[str, list[ChatMessage], list[str]]] = {}
    scoring: list[LoglikelihoodRequest] = []
    for doc_id, doc in _doc_rows(docs, opts.limit):
        if isinstance(doc, Exception):
            records.append(
                SampleRecord(
                    task=config.task,
                    doc_id=doc_id,
                    doc_hash="",
                    doc={},
                    error=SampleError("bad input", f"cannot decode row: {type(doc).__name__}: {doc}"),
                )
            )
            kept_docs.append({})
            continue
        doc_hash = stable_hash(doc)
        base = {"task": config.task, "doc_id": doc_id, "doc_hash": doc_hash, "doc": to_jsonable(strip_images(doc))}
        kept_docs.append(doc)
        try:
            target = runtime.target(doc)
            messages = runtime.build_messages(doc)
            follow_ups = runtime.follow_ups(doc)
            scored = (
                choice_request(messages, runtime.continuations(doc)) if config.output_type in SCORING_TYPES else None
            )
        except BadInputError as exc:
            records.append(SampleRecord(**base, error=SampleError("bad input", str(exc))))
            continue
        if scored is not None:
            scoring.append(scored)
            records.append(
                SampleRecord(**base, target=to_jsonable(target), prompt=prompt_json(messages), request_key=scored.key)
            )
            continue
        request = make_request(messages, settings.params, settings.n, opts.seed)
        requests.append(request)
        records.append(
            SampleRecord(
                **base,
                target=to_jsonable(target),
                prompt=prompt_json(messages),
                request_key=request.key,
                seed=request.seed,
            )
        )
        if follow_ups:
            conversations[doc_id] = (request.key, messages, follow_ups)
    prepared = _PreparedTask(
        config, runtime, settings, opened.dataset.fingerprint, records, kept_docs, conversations, scoring
    )
    return prepared, requests


def _generate(
    backend: Backend, requests: list[GenerationRequest], store: ResponseStore, opts: EvalOptions, desc: str = "generate"
) -> tuple[dict[str, list[str]], dict[str, SampleError], RequestCounts]:
    """Answer every request from the store or the backend; returns responses, errors and counts. The
    progress bar (labelled ``desc``) shows only when something is left to generate."""
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
        disable=not opts.show_progress or not missing,
    )
    try:
        for req, out in backend.answer(missing, opts.batch_size):
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
    opts = EvalOptions(tasks=[], batch_size=batch_size, show_progress=show_progress)
    responses, errors, _ = _generate(backend, requests, store, opts)
    return responses, errors


def _follow_up_turns(
    backend: Backend,
    tasks: list[_PreparedTask],
    responses: dict[str, list[str]],
    store: ResponseStore,
    opts: EvalOptions,
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
                pending[at].append(make_request(conv, params[at], 1, opts.seed))
        out, errors, round_stats = _generate(
            backend, [r for reqs in pending.values() for r in reqs], store, opts, f"turn {t + 2} of {last + 1}"
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
    backend: Backend,
    tasks: list[_PreparedTask],
    responses: dict[str, list[str]],
    store: ResponseStore,
    opts: EvalOptions,
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
        chains = run_rounds(
            task.runtime, first, task.params, opts.seed, _round_generator(backend, store, opts, task.config.task), stats
        )
        out.update({(task.config.task, doc_id): chain for doc_id, chain in chains.items()})
    return out


def _round_generator(backend: Backend, store: ResponseStore, opts: EvalOptions, task: str) -> Generate:
    """The generate step of a multi-round task: each call is the next round, its progress bar labelled so."""
    rounds = itertools.count(2)

    def generate(
        requests: list[GenerationRequest],
    ) -> tuple[dict[str, list[str]], dict[str, SampleError], RequestCounts]:
        return _generate(backend, requests, store, opts, f"{task} round {next(rounds)}")

    return generate


def group_results(
    registry: TaskRegistry,
    names: list[str],
    results: dict[str, dict[str, Any]],
    counts: dict[str, TaskCounts],
    intervals: dict[str, dict[str, Interval]] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Aggregate groups named on the command line by their ``aggregate_metric_list``; given the tasks'
    ``intervals``, each group's figures get theirs there too (:func:`harness.engine.intervals.group_interval`)."""
    groups: dict[str, dict[str, Any]] = {}
    subtasks: dict[str, list[str]] = {}
    for name in names:
        spec = registry.groups.get(name)
        if spec is None:
            continue
        members = registry.expand([name])
        subtasks[name] = members
        out: dict[str, Any] = {"alias": name}
        for agg in spec.aggregate_metric_list:
            metric = agg.metric
            for filt in agg.filter_list:
                figure = MetricKey(metric, filt)
                key, stderr_key = figure.encoded, figure.stderr.encoded
                have = [t for t in members if results[t].get(key) is not None]
                if not have:
                    continue
                sizes = [counts[t].scored for t in have]
                weights = sizes if agg.weight_by_size else [1] * len(have)
                out[key] = weighted_mean([results[t][key] for t in have], weights)
                if intervals is not None:
                    pooled = [(intervals.get(t, {}).get(key), w) for t, w in zip(have, weights, strict=True)]
                    intervals.setdefault(name, {})[key] = group_interval(out[key], pooled)
                stderrs = [results[t].get(stderr_key) for t in have]
                floats = [s for s in stderrs if isinstance(s, float)]
                ok = len(floats) == len(stderrs) and sum(sizes) > len(sizes)
                out[stderr_key] = pooled_stderr(floats, sizes) if ok else "N/A"
        groups[name] = out
    return groups, subtasks


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
    names = registry.expand(opts.tasks)
    prepared: list[_PreparedTask] = []
    all_requests: list[GenerationRequest] = []
    for name in names:
        task, requests = _prepare(registry.get(name), backend, opts, (datasets or {}).get(name))
        prepared.append(task)
        all_requests.extend(requests)
    store = ResponseStore(opts.store_path if opts.use_cache else None, read=not opts.refresh)
    try:
        gen_started = time.time()
        responses, errors, stats = _generate(backend, all_requests, store, opts)
        turns = _follow_up_turns(backend, prepared, responses, store, opts, stats)
        rounds = _multi_rounds(backend, prepared, responses, store, opts, stats)
        scores, score_errors, stats.scored = answer_choices(
            backend, [r for t in prepared for r in t.scoring], store, opts.batch_size
        )
        errors.update(score_errors)
        gen_seconds = time.time() - gen_started
    finally:
        store.close()
    run_dir, failure = _new_run_folder(opts.output, model_spec, started)
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
    answered = {t.config.task: _answered(t, responses, errors, scores, turns, rounds, stats.replaced) for t in prepared}
    order = scoring_order(registry, opts.tasks, list(answered))
    scored, scoring_seeds = score_tasks(answered, order, args)
    samples = {task: out.records for task, out in scored.items()}
    results = {task: out.results for task, out in scored.items()}
    counts = {task: out.counts for task, out in scored.items()}
    intervals = {task: out.intervals for task, out in scored.items()}
    groups, group_subtasks = group_results(registry, opts.tasks, results, counts, intervals)
    configs = {t.config.task: t.config for t in prepared}
    compared = compare_all(opts.baseline, configs, samples, results) if opts.baseline else {}
    reports, failure = _run_reports({t.config.task: t.runtime for t in prepared}, samples, run_dir, failure)
    wall = time.time() - started
    run = RunResults(
        results=results,
        groups=groups,
        group_subtasks=group_subtasks,
        configs={t.config.task: config_snapshot(t.config) for t in prepared},
        versions={t.config.task: t.config.version for t in prepared},
        n_samples={
            t.config.task: {"original": t.fingerprint["num_rows"], "effective": len(t.records)} for t in prepared
        },
        higher_is_better={
            t.config.task: {m.metric: m.higher_is_better for m in t.config.metric_list} for t in prepared
        },
        counts=counts,
        reports=reports,
        intervals=intervals,
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
        provenance=Provenance(
            **environment(),
            model=ModelInfo.model_validate(backend.info()),
            datasets={t.config.task: DatasetFingerprint.model_validate(t.fingerprint) for t in prepared},
            generation={t.config.task: t.settings.requests for t in prepared},
            seeds=opts.flags.seed_policy(scoring_seeds),
            started_at=datetime.fromtimestamp(started, UTC).isoformat(),
            wall_time_s=round(wall, 3),
            generation_time_s=round(gen_seconds, 3),
            throughput_samples_per_s=round(stats.generated_samples / gen_seconds, 3) if gen_seconds else None,
            requests=stats,
        ),
    )
    if opts.output is not None:
        try:
            if failure is not None:
                raise failure
            assert run_dir is not None
            write_run(run_dir, run, samples)
        except RunWriteError as exc:
            raise _unsaved(exc, run_dir or opts.output, run, samples, opts) from None
    return run, samples, run_dir


def _answered(
    task: _PreparedTask,
    responses: dict[str, list[str]],
    errors: dict[str, SampleError],
    scores: dict[str, list[ScoredChoice]],
    turns: dict[tuple[str, int], list[Turn]],
    rounds: dict[tuple[str, int], Rounds],
    replaced: set[str],
) -> TaskScoring:
    """A task's records with what the model answered (responses, scored choices, turns, rounds) or why it
    did not, ready to score; a sample whose answers needed replacement characters is marked (``replaced``: their
    request keys)."""
    final = []
    for record in task.records:
        key, at = record.request_key, (task.config.task, record.doc_id)
        if record.error is None and key is not None:
            if key in errors:
                record = record.model_copy(update={"error": errors[key]})
            elif key in scores:
                record = record.model_copy(update={"choices": scores[key]})
            elif at in rounds:
                chain = rounds[at]
                record = record.model_copy(
                    update={"responses": chain.result or [], "turns": chain.turns, "error": chain.error}
                )
            else:
                record = record.model_copy(update={"responses": responses[key], "turns": turns.get(at, [])})
        final.append(_marked(record, replaced))
    return TaskScoring(task.runtime, final, task.docs)


def _marked(record: SampleRecord, replaced: set[str]) -> SampleRecord:
    """The sample marked ``text_replaced`` when an answer of its request or of its turns needed it."""
    keys = {record.request_key, *(key for turn in record.turns for key in turn.request_keys)}
    return record.model_copy(update={"text_replaced": True}) if keys & replaced else record


def _new_run_folder(output: Path | None, model_spec: str, started: float) -> tuple[Path | None, RunWriteError | None]:
    """The new run folder under ``output`` (None without one); a full disk is returned as the failure, so the
    run can still be saved elsewhere."""
    if output is None:
        return None, None
    try:
        return new_run_dir(output, model_spec, started), None
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        return None, RunWriteError(failed_path(exc, output), exc, 0)


def _run_reports(
    runtimes: dict[str, TaskRuntime],
    samples: dict[str, list[SampleRecord]],
    run_dir: Path | None,
    failure: RunWriteError | None,
) -> tuple[dict[str, dict[str, Any]], RunWriteError | None]:
    """The tasks' reports, their plots written in ``run_dir``; a full disk while writing them becomes the
    failure, and the reports are made again without their plots."""
    if run_dir is not None and failure is None:
        try:
            return _reports(runtimes, samples, run_dir), None
        except OSError as exc:
            if not is_disk_error(exc):
                raise
            failure = RunWriteError(failed_path(exc, run_dir), exc, 0)
    return _reports(runtimes, samples, None), failure


def _unsaved(
    failure: RunWriteError, run_dir: Path, run: RunResults, samples: dict[str, list[SampleRecord]], opts: EvalOptions
) -> HarnessError:
    """The one-line error of an eval whose run folder cannot be written: the whole run is saved in a
    temporary folder instead (another file system, usually), to be finished with ``harness score``."""
    rescore = "".join(f" --include-path {shlex.quote(str(p))}" for p in opts.include_paths)
    fallback = Path(tempfile.mkdtemp(prefix="harness-unsaved-run-"))
    try:
        write_run(fallback, run, samples)
    except RunWriteError as again:
        shutil.rmtree(fallback, ignore_errors=True)
        kept = (
            (
                f"the answers are in the response store {opts.store_path}: free space and rerun the same command, "
                "which generates nothing again"
            )
            if opts.use_cache and opts.store_path
            else "the answers could not be kept (no response store): free space and rerun the command"
        )
        return HarnessError(f"cannot write the run folder: {failure}; nor a copy elsewhere ({again}); {kept}")
    kept = "the samples files written there are kept, and " if any(run_dir.glob("samples_*.jsonl")) else ""
    finish = f"harness score {shlex.quote(str(fallback))} --output {shlex.quote(str(run_dir))}{rescore}"
    return HarnessError(
        f"cannot write the run folder: {failure}; {kept}the whole run is saved in {fallback}: free "
        f"space, then `{finish}` writes it there"
    )


def _reports(
    runtimes: dict[str, TaskRuntime], samples: dict[str, list[SampleRecord]], run_dir: Path | None
) -> dict[str, dict[str, Any]]:
    out = {}
    for task, runtime in runtimes.items():
        report = runtime.report(samples[task], run_dir)
        if report is not None:
            out[task] = report
    return out


def rescoring_input(
    config: TaskConfig, model_family: str | None, records: list[SampleRecord], data_dir: Path | None
) -> TaskScoring:
    """One task's saved samples ready to score again with its scoring code; tasks whose scoring reads images
    load the dataset (``data_dir``) for them."""
    if config.process_results_use_image:
        opened = open_task(config, model_family, data_dir)
        return TaskScoring(opened.runtime, records, [opened.docs[r.doc_id] for r in records])
    return TaskScoring(TaskRuntime(config, model_family), records, [r.doc for r in records])


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
    family = model_family_of(run)
    check_output(dest)
    args = aggregation_args(
        dest,
        run.config.model,
        run.config.tasks,
        limit=run.config.limit,
        seed=run.config.seed,
        batch_size=run.config.batch_size,
        gen_kwargs=run.config.gen_overrides,
        include_paths=run.config.include_paths,
    )
    inputs = {
        task: rescoring_input(registry.get(task), family, read_samples(run_dir, task), data_dir) for task in run.configs
    }
    scored, scoring_seeds = score_tasks(inputs, scoring_order(registry, run.config.tasks, list(inputs)), args)
    runtimes = {task: inputs[task].runtime for task in inputs}
    samples = {task: out.records for task, out in scored.items()}
    results = {task: out.results for task, out in scored.items()}
    counts = {task: out.counts for task, out in scored.items()}
    intervals = {task: out.intervals for task, out in scored.items()}
    groups, group_subtasks = group_results(registry, run.config.tasks, results, counts, intervals)
    try:  # the run's --baseline comparison again, on the rescored samples
        configs = {t: registry.get(t) for t in run.configs}
        compared = compare_all(run.config.baseline, configs, samples, results) if run.config.baseline else {}
    except HarnessError as exc:
        log.warning("the baseline comparison is left out: %s", exc)
        compared = {}
    originals = None
    try:
        originals = _keep_originals(run_dir) if in_place else None
        before = _file_stamps(dest)
        reports = _reports(runtimes, samples, dest)
        written = sorted(
            {
                "results.json",
                *(f"samples_{t}.jsonl" for t in samples),
                *(name for name, stamp in _file_stamps(dest).items() if before.get(name) != stamp),
            }
        )
        updated = run.model_copy(
            update={
                "results": results,
                "intervals": intervals,
                "baseline": compared,
                "counts": counts,
                "groups": groups,
                "group_subtasks": group_subtasks,
                "reports": reports,
                "provenance": run.provenance.model_copy(
                    update={
                        "seeds": run.provenance.seeds.model_copy(update={"scoring": scoring_seeds}),
                        "rescored": Rescoring(
                            **environment(),
                            source=str(run_dir.resolve()),
                            files=written,
                            originals=None if originals is None else str(originals),
                        ),
                    }
                ),
            }
        )
        write_run(dest, updated, samples)
    except (OSError, RunWriteError) as exc:
        if isinstance(exc, OSError) and not is_disk_error(exc):
            raise
        problem = exc if isinstance(exc, RunWriteError) else disk_problem(failed_path(exc, dest), exc)
        kept = (
            f"the run's files as first written are in {originals}"
            if originals is not None
            else f"{run_dir} is unchanged"
            if not in_place
            else "the run's files are unchanged"
        )
        raise HarnessError(
            f"cannot write the rescored run: {problem}; {kept}: free space and rerun harness score"
        ) from None
    return updated, samples


_ORIGINALS = "original"


def _file_stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir() if p.is_file()}


def _keep_originals(run_dir: Path) -> Path:
    """Copy the run's claim (results.json, samples, plots) to ``run_dir/original/`` unless a copy is there
    already; the copy is made in a temporary folder and renamed, so it is whole or absent."""
    kept = run_dir / _ORIGINALS
    if (kept / "results.json").is_file():
        return kept
    tmp = run_dir / f".{_ORIGINALS}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        for path in run_dir.iterdir():
            if path.is_file() and (
                path.name == "results.json"
                or path.suffix == ".png"
                or (path.name.startswith("samples_") and path.suffix == ".jsonl")
            ):
                shutil.copy2(path, tmp / path.name)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk: no half copy is left
        raise
    shutil.rmtree(kept, ignore_errors=True)  # an incomplete copy (no results.json) is replaced
    os.replace(tmp, kept)
    return kept


def check_output(output: Path | None) -> None:
    """Fail in one line when no run folder can be written under ``output`` (a file in the way, no
    permission, a read-only disk), by creating it and a probe file, before any model loads or generates."""
    if output is None:
        return
    try:
        output.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=output, prefix=".harness-write-check-"):
            pass
    except OSError as exc:
        raise HarnessError(
            f"--output {output}: cannot write a run folder there ({exc.strerror or exc}); choose another folder"
        ) from None


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
        TaskRuntime(config, opts.lmms_model)
        resolve_settings(config, None, opts.flags)  # the model's family only adds a valid default length
        configs.append(config)
    return load_task_datasets(configs, opts.data_dir, opts.build_hint)


def require_tasks(names: list[str]) -> list[str]:
    """The ``--tasks`` names, refusing an empty list in one line."""
    if not names:
        raise HarnessError("--tasks is required (comma-separated task, group or tag names)")
    return names
