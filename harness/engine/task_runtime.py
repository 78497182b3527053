"""A task made executable: prompts from docs, and per-sample scores from responses.

The same :class:`TaskRuntime` serves ``harness eval`` and ``harness score``, so re-scoring saved
samples runs exactly the code that scored them the first time.
"""

from __future__ import annotations

import ast
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from harness.display import short_repr
from harness.engine import lmms_statistics
from harness.engine.filters import Step, apply_pipeline, check_filters, resolve_step
from harness.engine.intervals import task_intervals
from harness.errors import TaskConfigError
from harness.hashing import to_jsonable
from harness.metrics.aggregation import AGGREGATIONS, STDERRS
from harness.metrics.choice import choice_metrics
from harness.metrics.lmms_builtin import BUILTIN_METRICS, builtin_metric_names
from harness.models.base import SCORING_TYPES
from harness.models.messages import ChatMessage, from_lmms
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey
from harness.results.sample_error import SampleError
from harness.results.schema import SampleRecord, TaskCounts
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import FunctionRef, ModuleScope

if TYPE_CHECKING:
    from harness.engine.fewshot import FewShotSampler

log = logging.getLogger(__name__)
#: The most choices one ``multiple_choice`` doc may have: each is a request scored by the model.
MAX_CHOICES = 1000


class BadInputError(Exception):
    """A doc could not be turned into a prompt or scored (an undecodable image, a null or missing field)."""


# A task's harness_report: (its records, the run folder or None, its metadata) -> a JSON-able summary.
ReportFunction = Callable[[list[SampleRecord], Path | None, dict[str, Any]], dict[str, Any] | None]


@contextmanager
def doc_step(step: str) -> Iterator[None]:
    """Task code failing on one doc is that doc's error (named by the step), not the run's end; a task's
    configuration mistakes (TaskConfigError) still stop the run."""
    try:
        yield
    except TaskConfigError:
        raise
    except BadInputError as exc:
        raise BadInputError(f"{step}: {exc}") from exc
    except Exception as exc:
        raise BadInputError(f"{step}: {type(exc).__name__}: {exc}") from exc


def _is_image(value: Any) -> bool:
    return hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size")


def strip_images(doc: dict[str, Any]) -> dict[str, Any]:
    """The doc as ``process_results`` sees it: image columns removed, as lmms-eval does."""
    out = {}
    for key, value in doc.items():
        if _is_image(value) or (isinstance(value, list) and value and all(_is_image(v) for v in value)):
            continue
        if isinstance(value, dict) and (("bytes" in value and "path" in value) or "image_sha256" in value):
            continue
        out[key] = value
    return out


MULTI_ROUND = "generate_until_multi_round"


@dataclass(frozen=True)
class RoundStep:
    """What a multi-round task's ``doc_to_text`` asks next: the round's messages, or the end and the result."""

    messages: list[ChatMessage]
    context: str
    terminal: bool
    results: list[Any]  # the answers so far as the task keeps them; the doc's result when terminal
    info: Any


def _decoded(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages, with every image decoded now, so a corrupt file is this doc's error."""
    with doc_step("image"):
        for message in messages:
            for image in message.images:
                if not _is_image(image):
                    raise BadInputError(f"image is {type(image).__name__}, not a decoded image")
                image.load()
    return messages


def _call_with_kwargs(fn: Callable[..., Any], doc: Any, kwargs: dict[str, Any] | None) -> Any:
    """Call ``fn(doc, lmms_eval_specific_kwargs)`` when it takes a second argument, as lmms-eval does."""
    try:
        n_params = len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        n_params = 2
    return fn(doc, kwargs) if n_params >= 2 else fn(doc)


class TaskRuntime:
    """Resolved functions and settings of one task for one model family.

    Each runtime executes the task's code afresh (its own :class:`ModuleScope`), so state a task's module
    keeps between calls (OCRBench's aggregation adds into a module-level dict) belongs to one run of one
    model, never to the next model or task evaluated in the same process."""

    def __init__(self, config: TaskConfig, model_family: str | None) -> None:
        self.config = config
        self.specific_kwargs = config.specific_kwargs(model_family)
        self.target_kwargs = config.target_kwargs(model_family)
        self.modules = ModuleScope()
        self._warned_literal = False
        where = str(config.source)
        check_filters(config.filters, where)
        self._doc_to_visual = self._fn(config.doc_to_visual, "doc_to_visual")
        self._doc_to_messages = self._fn(config.doc_to_messages, "doc_to_messages")
        self._process_results = self._fn(config.process_results, "process_results")
        self._process_docs = self._fn(config.process_docs, "process_docs")
        # doc_to_text / doc_to_target may be a !function or a field/template: resolve functions once.
        self._doc_to_text = self._maybe_fn(config.doc_to_text)
        self._doc_to_target = self._maybe_fn(config.doc_to_target)
        self._doc_to_choice = self._maybe_fn(config.doc_to_choice)
        self._pipelines: list[tuple[str, list[Step]]] = [
            (pipe.name, [resolve_step(step, where, self.modules) for step in pipe.steps]) for pipe in config.filters
        ]
        self._report = _report_function(config)
        self.fewshot: FewShotSampler | None = None  # set by open_task for num_fewshot > 0
        self._aggregations: dict[str, Callable[..., Any]] = {}
        for spec in config.metric_list:
            agg = spec.aggregation
            if isinstance(agg, FunctionRef):
                self._aggregations[spec.metric] = agg.resolve(self.modules)
            elif agg in AGGREGATIONS:
                self._aggregations[spec.metric] = AGGREGATIONS[agg]
            else:
                raise TaskConfigError(
                    f"{config.source}: aggregation {agg!r} of {spec.metric!r} is unknown "
                    f"(named: {', '.join(AGGREGATIONS)}, or !function)"
                )
        if not config.metric_list:
            raise TaskConfigError(f"{config.source}: task {config.task} has no metric_list")
        if self._doc_to_messages is None and config.doc_to_text is None:
            raise TaskConfigError(f"{config.source}: task {config.task} needs doc_to_text or doc_to_messages")
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

    def _fn(self, value: Any, key: str) -> Callable[..., Any] | None:
        if value is None:
            return None
        if isinstance(value, FunctionRef):
            return value.resolve(self.modules)
        raise TaskConfigError(f"{key} must be a !function reference, got {value!r}")

    def _maybe_fn(self, value: Any) -> Callable[..., Any] | None:
        return value.resolve(self.modules) if isinstance(value, FunctionRef) else None

    def process_docs(self, docs: Any) -> Any:
        """The task's ``process_docs`` over the whole dataset; failing there is the task's error, in one line."""
        if self._process_docs is None:
            return docs
        try:
            return self._process_docs(docs)
        except TaskConfigError:
            raise
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise TaskConfigError(
                f"task {self.config.task}: process_docs failed ({type(exc).__name__}: {first}); "
                f"check {self.config.source.parent}"
            ) from exc

    # -- prompts -------------------------------------------------------------------------------
    def text(self, doc: dict[str, Any]) -> str:
        """The doc's ``doc_to_text``."""
        if self._doc_to_text is not None:
            return str(_call_with_kwargs(self._doc_to_text, doc, self.specific_kwargs))
        return _render_field(self.config.doc_to_text, doc)

    @staticmethod
    def render(spec: str, doc: dict[str, Any]) -> str:
        """A column name or a Jinja2 template over the doc (``description``, ``harness_turns``)."""
        return _render_field(spec, doc)

    def build_messages(self, doc: dict[str, Any]) -> list[ChatMessage]:
        """The chat messages for a doc: doc_to_messages, or images first then doc_to_text."""
        if self._doc_to_messages is not None:
            with doc_step("doc_to_messages"):
                messages = from_lmms(_call_with_kwargs(self._doc_to_messages, doc, self.specific_kwargs))
        else:
            with doc_step("doc_to_visual"):
                visuals = self._doc_to_visual(doc) if self._doc_to_visual else []
            with doc_step("doc_to_text"):
                shots = self.fewshot.context(doc) if self.fewshot is not None else ""
                text = shots + self.text(doc)
            messages = [ChatMessage.user(text, visuals or [])]
        return _decoded(messages)

    def next_round(self, doc: dict[str, Any], previous_output: list[str], round_idx: int, info: Any) -> RoundStep:
        """Round ``round_idx`` of a ``generate_until_multi_round`` task: its ``doc_to_text`` called as
        lmms-eval's models call it, checked to return (visuals, context, terminal_signal, round_results,
        round_info)."""
        if self._doc_to_text is None:
            raise TaskConfigError(
                f"{self.config.source}: a generate_until_multi_round task needs doc_to_text as a !function"
            )
        with doc_step("doc_to_text"):
            step = self._doc_to_text(
                doc,
                lmms_eval_specific_kwargs=self.specific_kwargs,
                previous_output=list(previous_output),
                round_idx=round_idx,
                previous_round_info=info,
            )
            if not isinstance(step, tuple | list) or len(step) != 5:
                raise BadInputError(
                    f"round {round_idx} returned {type(step).__name__}, not (visuals, context, "
                    "terminal_signal, round_results, round_info)"
                )
        visuals, context, terminal, results, next_info = step
        if terminal:
            return RoundStep([], "", True, list(results or []), next_info)
        return RoundStep(
            _decoded([ChatMessage.user(str(context), visuals or [])]),
            str(context),
            False,
            list(results or []),
            next_info,
        )

    def choices(self, doc: dict[str, Any]) -> list[str]:
        """A ``multiple_choice`` doc's choices, read as lmms-eval reads ``doc_to_choice``: a column, a template
        that renders a Python list, a list, a mapping (its values) or a function."""
        spec = self.config.doc_to_choice
        with doc_step("doc_to_choice"):
            if self._doc_to_choice is not None:
                value = self._doc_to_choice(doc)
            elif isinstance(spec, dict):
                value = list(spec.values())
            elif isinstance(spec, str):
                value = doc[spec] if spec in doc else ast.literal_eval(_render_field(spec, doc))
            else:
                value = spec
            if not isinstance(value, list | tuple) or not value:
                raise BadInputError(f"choices are {short_repr(value)}, not a non-empty list")
            if len(value) > MAX_CHOICES:
                raise BadInputError(f"{len(value)} choices; at most {MAX_CHOICES} are scored for one doc")
            return [str(v) for v in value]

    def continuations(self, doc: dict[str, Any]) -> list[str]:
        """The texts scored after the prompt: ``target_delimiter`` + each choice; for ``loglikelihood`` the
        doc's target as it is (lmms-eval passes ``doc_to_target``'s value with no delimiter)."""
        if self.config.output_type == "loglikelihood":
            target = self.target(doc)
            if target is None or isinstance(target, list | dict):
                raise BadInputError(f"doc_to_target gives {target!r}, not one text to score")
            return [str(target)]
        return [f"{self.config.target_delimiter}{c}" for c in self.choices(doc)]

    def target(self, doc: dict[str, Any]) -> Any:
        """The doc's target; a field that is null is this doc's bad input, never the string 'None'."""
        spec = self.config.doc_to_target
        if spec is None:
            return None
        if self.config.output_type == "multiple_choice" and isinstance(spec, str) and self._doc_to_target is None:
            with doc_step("doc_to_target"):
                return _choice_target(spec, doc)
        with doc_step("doc_to_target"):
            if self._doc_to_target is not None:
                return self._call_target(doc)
            if isinstance(spec, int):
                return spec
            if isinstance(spec, str) and spec not in doc and not _is_template(spec) and not self._warned_literal:
                self._warned_literal = True
                log.warning(
                    "task %s: doc_to_target %r names no column and is no template; every doc gets it "
                    "as a literal target",
                    self.config.task,
                    spec,
                )
            return _render_field(spec, doc)

    def _call_target(self, doc: dict[str, Any]) -> Any:
        """A ``doc_to_target`` function called as lmms-eval calls it: with the model's
        ``model_specific_target_kwargs`` value when the task sets one, else with the doc alone."""
        assert self._doc_to_target is not None
        if self.target_kwargs is not None:
            return self._doc_to_target(doc, self.target_kwargs)
        return self._doc_to_target(doc)

    def gold(self, doc: dict[str, Any]) -> Any:
        """The reference(s) lmms-eval's built-in metrics compare with: ``doc_to_target``'s value as lmms-eval
        reads it (a column's value as it is, a list kept a list), a choice index turned into its choice."""
        spec = self.config.doc_to_target
        if self._doc_to_target is not None:
            gold = self._call_target(doc)
        elif isinstance(spec, str) and self.config.doc_to_choice is not None:
            gold = _choice_target(spec, doc)
        elif isinstance(spec, str):
            gold = _not_null(doc[spec]) if spec in doc else _list_literal(_render_field(spec, doc))
        else:
            gold = spec
        if self.config.doc_to_choice is not None and isinstance(gold, int):
            return self.choices(doc)[gold]
        return gold

    def follow_ups(self, doc: dict[str, Any]) -> list[str]:
        """The user turns that follow the answer, from ``metadata: {harness_turns: [...]}`` (each a doc
        column name or a Jinja2 template over the doc). lmms-eval ignores the key and runs turn 1 only."""
        with doc_step("harness_turns"):
            return [_render_field(turn, doc) for turn in self.config.harness_turns]

    # -- scoring -------------------------------------------------------------------------------
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
        gold = self.gold(doc)
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


def _choice_target(spec: str, doc: dict[str, Any]) -> Any:
    """A multiple_choice gold as lmms-eval reads it: a column's value as it is (an index or a choice), or a
    template rendering a digit (an index) or a list literal (several golds)."""
    if spec in doc:
        return _not_null(doc[spec])
    text = _render_field(spec, doc)
    return int(text) if text.isdigit() else _list_literal(text)


def _list_literal(text: str) -> Any:
    """A rendered target that reads as a Python list literal, as that list (lmms-eval's reading)."""
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        try:
            return ast.literal_eval(text)
        except (SyntaxError, ValueError):
            return text
    return text


def _is_template(spec: str) -> bool:
    return "{{" in spec or "{%" in spec


def _not_null(value: Any) -> Any:
    if value is None:
        raise BadInputError("a value it prints is null")
    return value


@functools.cache
def _template(spec: str) -> Any:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, finalize=_not_null, autoescape=False)
    return env.from_string(spec)


def _render_field(spec: Any, doc: dict[str, Any]) -> str:
    """A doc_to_text/doc_to_target string: a column name, or a Jinja2 template over the doc. A null value
    is the doc's bad input: rendering it would score a missing answer as the string 'None'."""
    if isinstance(spec, str) and spec in doc:
        if doc[spec] is None:
            raise BadInputError(f"column {spec!r} is null")
        return str(doc[spec])
    import jinja2

    try:
        return str(_template(str(spec)).render(**doc))
    except (jinja2.TemplateError, BadInputError) as exc:
        raise BadInputError(f"template {spec!r}: {exc}") from exc
