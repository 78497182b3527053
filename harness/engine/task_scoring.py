"""How a task's answers are scored: its filter pipelines, ``process_results`` (or lmms-eval's built-in
metrics), each metric's aggregation and interval, and the task's own report.

:class:`TaskScorer` is the second half of an opened task (``harness.engine.tasks.open_task``), beside its
``TaskPrompts``, in the same module scope. The same scorer serves ``harness eval``, ``harness score`` and
the leaderboard, so re-scoring saved samples runs exactly the code that scored them the first time.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from harness.engine import lmms_statistics
from harness.engine.filters import Step, apply_pipeline, check_filters, resolve_step
from harness.engine.intervals import task_intervals
from harness.engine.task_prompts import MULTI_ROUND, BadInputError, TaskPrompts, doc_step, strip_images, task_function
from harness.errors import TaskConfigError
from harness.hashing import to_jsonable
from harness.metrics.aggregation import AGGREGATIONS, STDERRS
from harness.metrics.choice import choice_metrics
from harness.metrics.lmms_builtin import BUILTIN_METRICS, builtin_metric_names
from harness.models.base import SCORING_TYPES
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey
from harness.results.sample_error import SampleError
from harness.results.schema import SampleRecord, TaskCounts
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import FunctionRef, ModuleScope

log = logging.getLogger(__name__)

# A task's harness_report: (its records, the run folder or None, its metadata) -> a JSON-able summary.
ReportFunction = Callable[[list[SampleRecord], Path | None, dict[str, Any]], dict[str, Any] | None]


class TaskScorer:
    """A task's scoring: its functions resolved in ``modules`` (the opened task's one module scope, shared
    with ``prompts``, whose targets the built-in metrics compare with).

    Each opened task executes the task's code afresh (its own :class:`ModuleScope`), so state a task's module
    keeps between calls (OCRBench's aggregation adds into a module-level dict) belongs to one run of one
    model, never to the next model or task evaluated in the same process."""

    def __init__(self, config: TaskConfig, prompts: TaskPrompts, modules: ModuleScope) -> None:
        self.config = config
        self.prompts = prompts
        where = str(config.source)
        check_filters(config.filters, where)
        self._process_results = task_function(config.process_results, "process_results", modules)
        self._pipelines: list[tuple[str, list[Step]]] = [
            (pipe.name, [resolve_step(step, where, modules) for step in pipe.steps]) for pipe in config.filters
        ]
        self._report = _report_function(config)
        self._aggregations = _aggregations(config, modules)
        if not config.metric_list:
            raise TaskConfigError(f"{config.source}: task {config.task} has no metric_list")
        self._check_builtin_metrics()

    def _check_builtin_metrics(self) -> None:
        """Without ``process_results`` every metric must be one lmms-eval computes by itself for the output
        type (``exact_match``, ``anls``, ... for generate_until); anything else could never get a value."""
        if self._process_results is not None or self.config.output_type == MULTI_ROUND:
            return
        known = builtin_metric_names(self.config.output_type)
        for spec in self.config.metric_list:
            if spec.metric not in known:
                raise TaskConfigError(
                    f"{self.config.source}: metric {spec.metric!r} needs a process_results (the task has none, and "
                    f"lmms-eval's built-in metrics for {self.config.output_type} are {', '.join(known)})"
                )

    def score(self, record: SampleRecord, doc: dict[str, Any]) -> SampleRecord:
        """One record scored (:meth:`score_all` of one)."""
        return self.score_all([record], [doc])[0]

    def score_all(self, records: Sequence[SampleRecord], docs: Sequence[dict[str, Any]]) -> list[SampleRecord]:
        """Fill ``filtered``, ``metrics`` and ``unparsed`` of each record that has responses, in lmms-eval's
        order: each filter pipeline in turn over every doc (``evaluator.evaluate``), which a scorer that draws
        random numbers depends on; then, for a doc answered several times, ``response_metrics``: each answer
        scored alone. Scoring code that fails on a doc makes it that sample's error (re-scoring
        tries it again), never the run's end."""
        empty: dict[str, Any] = {"filtered": {}, "metrics": {}, "unparsed": [], "response_metrics": {}}
        choices = self.config.output_type in SCORING_TYPES
        scored: dict[int, dict[str, Any]] = {
            i: {"filtered": {}, "metrics": {}, "unparsed": [], "response_metrics": {}}
            for i, record in enumerate(records)
            if (record.choices if choices else record.responses)
            and (record.error is None or record.error.kind == "scoring failed")
        }
        failed: dict[int, SampleError] = {}
        for pipeline in [None] if choices else self._pipelines:
            for i, doc in enumerate(docs):
                if i not in scored or i in failed:
                    continue
                try:
                    with doc_step("process_results"):
                        self._score(records[i], doc, pipeline, scored[i])
                except BadInputError as exc:
                    failed[i] = SampleError("scoring failed", str(exc))
        if self.config.output_type == "generate_until":  # after lmms-eval's own pass, so its draws are unchanged
            for pipeline in self._pipelines:
                for i, doc in enumerate(docs):
                    if i in scored and i not in failed and len(records[i].responses) > 1:
                        try:
                            with doc_step("process_results"):
                                self._score_each(records[i], doc, pipeline, scored[i])
                        except BadInputError as exc:
                            failed[i] = SampleError("scoring failed", str(exc))
        return [
            record.model_copy(update={**empty, "error": failed[i]})
            if i in failed
            else record.model_copy(update={**scored[i], "error": None})
            if i in scored
            else record.model_copy(update=empty)
            for i, record in enumerate(records)
        ]

    def _score(
        self, record: SampleRecord, doc: dict[str, Any], pipeline: tuple[str, list[Step]] | None, into: dict[str, Any]
    ) -> None:
        """One record through one filter pipeline (``None``: a loglikelihood task's one pass), its outputs
        added to ``into``."""
        scoring_doc = doc if self.config.process_results_use_image else strip_images(doc)
        if pipeline is None:
            into.update(self._score_choices(record, scoring_doc))
            return
        if record.turns:  # multi-turn tasks read their follow-up answers from the doc
            scoring_doc = {**scoring_doc, "harness_turns": [t.model_dump() for t in record.turns]}
        name, steps = pipeline
        # a multi-round doc's result is one tuple of its rounds' results, which lmms-eval passes whole
        answers = (
            [tuple(record.responses)]
            if self.config.output_type == MULTI_ROUND
            else apply_pipeline(steps, record.responses, scoring_doc)
        )
        into["filtered"][name] = answers[0] if len(answers) == 1 else answers
        values = self._values(scoring_doc, answers)
        for spec in self.config.metric_list:
            key = MetricKey(spec.metric, name).encoded
            if spec.metric not in values:
                continue  # not applicable to this doc (as in lmms-eval); never counted
            value = to_jsonable(values[spec.metric])
            into["metrics"][key] = value
            if value is None:
                into["unparsed"].append(key)

    def _score_each(
        self, record: SampleRecord, doc: dict[str, Any], pipeline: tuple[str, list[Step]], into: dict[str, Any]
    ) -> None:
        """Each of a repeated doc's answers scored alone through one filter pipeline (lmms-eval's per-sample
        scores under repeats, which its stability metrics read), added to ``into["response_metrics"]``."""
        scoring_doc = doc if self.config.process_results_use_image else strip_images(doc)
        if record.turns:
            scoring_doc = {**scoring_doc, "harness_turns": [t.model_dump() for t in record.turns]}
        name, steps = pipeline
        for response in record.responses:
            alone = self._values(scoring_doc, apply_pipeline(steps, [response], scoring_doc))
            for spec in self.config.metric_list:
                if spec.metric in alone:
                    key = MetricKey(spec.metric, name).encoded
                    into["response_metrics"].setdefault(key, []).append(to_jsonable(alone[spec.metric]))

    def _values(self, doc: dict[str, Any], answers: list[Any]) -> dict[str, Any]:
        """The metric values of one doc's filtered answers: its ``process_results``, or lmms-eval's built-in
        metrics; a generate_until answer is stripped first, as lmms-eval strips it."""
        if self.config.output_type == "generate_until":
            answers = [a.strip() if isinstance(a, str) else "" if a is None else a for a in answers]
        if self._process_results is not None:
            values = self._process_results(doc, answers)
        else:
            values = self._builtin_metrics(doc, answers)
        if not isinstance(values, dict):
            raise BadInputError(f"returned {type(values).__name__}, not a dict of metric values")
        return values

    def _builtin_metrics(self, doc: dict[str, Any], answers: list[Any]) -> dict[str, Any]:
        """lmms-eval's scoring of a generate_until task without ``process_results``: each metric_list entry's
        built-in metric, called with the entry's options, against the doc's reference(s). Several references
        (a list target) score 1.0 when any one matches, except for ``anls``, which takes its best reference."""
        gold = self.prompts.gold(doc)
        values: dict[str, Any] = {}
        for spec in self.config.metric_list:
            fn = BUILTIN_METRICS[spec.metric][0]
            if isinstance(gold, list) and spec.metric != "anls":
                hits = [fn(references=[g], predictions=answers, **spec.options) for g in gold]
                values[spec.metric] = 1.0 if any(hits) else 0.0
            else:
                values[spec.metric] = fn(
                    references=gold if isinstance(gold, list) else [gold], predictions=answers, **spec.options
                )
        return values

    def _score_choices(self, record: SampleRecord, doc: dict[str, Any]) -> dict[str, Any]:
        """lmms-eval's scoring of loglikelihood requests: ``process_results(doc, [(loss, is_greedy), ...])``
        when the task has one (the mean token loss is what lmms-eval's models return), else for
        ``multiple_choice`` acc / acc_norm / exact_match (harness.metrics.choice), and for ``loglikelihood``
        ``perplexity`` (the summed log-probability, aggregated as ``exp(-mean)``) and ``acc`` (greedy
        decoding gives the target). lmms-eval 0.7.3's own built-in ``loglikelihood`` scoring unpacks the
        one result as a pair and fails; these are lm-evaluation-harness's definitions. Filters do not apply."""
        results = [(c.mean_loss, c.is_greedy) for c in record.choices]
        if self._process_results is not None:
            values = self._process_results(doc, results)
            if not isinstance(values, dict):
                raise BadInputError(f"returned {type(values).__name__}, not a dict of metric values")
        elif self.config.output_type == "loglikelihood":
            (choice,) = record.choices
            values = {"perplexity": choice.loglikelihood, "acc": float(choice.is_greedy)}
        else:
            choices = [c.continuation[len(self.config.target_delimiter) :] for c in record.choices]
            values = choice_metrics([r[0] for r in results], [r[1] for r in results], choices, record.target)
        metrics = {
            MetricKey(spec.metric, name).encoded: to_jsonable(values[spec.metric])
            for name, _ in self._pipelines
            for spec in self.config.metric_list
            if spec.metric in values
        }
        return {"filtered": {}, "metrics": metrics, "unparsed": [k for k, v in metrics.items() if v is None]}

    def aggregate(self, records: list[SampleRecord], args: Any = None) -> tuple[dict[str, Any], TaskCounts]:
        """Task-level values: each metric's aggregation (errors and unparsed samples excluded). An aggregation
        function that takes ``args`` gets ``args`` (lmms-eval passes its command line's namespace; see
        :func:`harness.engine.lmms_args.aggregation_args`)."""
        scored = [r for r in records if r.error is None]
        results: dict[str, Any] = {"alias": self.config.task}
        unparsed: dict[str, int] = {}
        for pipe in self.config.filters:
            for spec in self.config.metric_list:
                figure = MetricKey(spec.metric, pipe.name)
                key = figure.encoded
                values = [r.metrics[key] for r in scored if key in r.metrics]
                unparsed[key] = sum(v is None for v in values)
                present = [v for v in values if v is not None]
                results[key] = self._aggregate(key, spec.metric, present, args) if present else None
                stderr = STDERRS.get(spec.aggregation) if isinstance(spec.aggregation, str) else None
                results[figure.stderr.encoded] = stderr(present) if stderr and present else "N/A"
                results.update(lmms_statistics.stderrs(figure, values, self.config))
                results.update(lmms_statistics.stability(scored, figure, self.config.score_key))
        counts = TaskCounts(
            samples=len(records),
            scored=len(scored),
            errors=len(records) - len(scored),
            unparsed={k: v for k, v in unparsed.items() if v},
        )
        return results, counts

    def intervals(self, records: list[SampleRecord], results: dict[str, Any]) -> dict[str, Interval]:
        """The 95% interval of each figure :meth:`aggregate` gave (harness.engine.intervals); an aggregation
        that takes ``args`` is never run again on resamples."""
        again = {metric: None if _takes_args(fn) else fn for metric, fn in self._aggregations.items()}
        return task_intervals(self.config, records, results, again)

    def _aggregate(self, key: str, metric: str, values: list[Any], args: Any) -> Any:
        """One metric's aggregate; aggregation code that fails (lmms-eval's MME asserts whole pairs, which a
        ``--limit`` can split) leaves that value null with one warning, and the run and its samples are kept."""
        fn = self._aggregations[metric]
        try:
            if not _takes_args(fn):
                return to_jsonable(fn(values))
            if args is None:  # a caller with no run (re-scoring on a server): task files go to a temporary folder
                from harness.engine.lmms_args import aggregation_args

                args = aggregation_args(None, "", [self.config.task])
            return to_jsonable(fn(values, args=args))
        except Exception as exc:
            log.warning(
                "task %s: aggregation of %s failed (%s: %s); its value is null",
                self.config.task,
                key,
                type(exc).__name__,
                exc,
            )
            return None

    def report(self, records: list[SampleRecord], out_dir: Path | None) -> dict[str, Any] | None:
        """The task's extra report (tables, confidence intervals, plots written to ``out_dir``).

        A task names it with ``metadata: {harness_report: module.function}`` (relative to the task
        YAML's folder, like ``!function``); lmms-eval ignores the key. Called as
        ``function(records, out_dir, metadata)``; returns a JSON-able dict stored under ``reports`` in
        results.json.
        """
        if self._report is None:
            return None
        report: dict[str, Any] | None = to_jsonable(self._report(records, out_dir, self.config.metadata))
        return report


def _takes_args(fn: Callable[..., Any]) -> bool:
    """Whether an aggregation function has an ``args`` parameter (lmms-eval's test for passing it)."""
    try:
        return "args" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _report_function(config: TaskConfig) -> ReportFunction | None:
    """The task's ``harness_report``, imported and checked to take ``(records, out_dir, metadata)`` when the
    runtime is built (before any model loads), so a misspelt name never surfaces after all generation."""
    if config.harness_report is None:
        return None
    try:
        fn = FunctionRef(config.harness_report, config.source.parent).resolve()
    except TaskConfigError as exc:
        raise TaskConfigError(f"{config.source}: metadata harness_report: {exc}") from None
    try:
        inspect.signature(fn).bind([], None, {})
    except TypeError:
        raise TaskConfigError(
            f"{config.source}: metadata harness_report {config.harness_report} must take (records, out_dir, metadata)"
        ) from None
    except ValueError:  # no signature to inspect (a builtin): called as written
        pass
    return cast(ReportFunction, fn)


def _aggregations(config: TaskConfig, modules: ModuleScope) -> dict[str, Callable[..., Any]]:
    """Each metric's aggregation: a named one (harness.metrics.aggregation) or the task's ``!function``."""
    out: dict[str, Callable[..., Any]] = {}
    for spec in config.metric_list:
        agg = spec.aggregation
        if isinstance(agg, FunctionRef):
            out[spec.metric] = agg.resolve(modules)
        elif agg in AGGREGATIONS:
            out[spec.metric] = AGGREGATIONS[agg]
        else:
            raise TaskConfigError(
                f"{config.source}: aggregation {agg!r} of {spec.metric!r} is unknown "
                f"(named: {', '.join(AGGREGATIONS)}, or !function)"
            )
    return out
