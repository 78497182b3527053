"""The typed task specification: lmms-eval's ``TaskConfig`` keys, validated once."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import TaskConfigError
from harness.taskspec.yaml_loader import FunctionRef

log = logging.getLogger(__name__)

# lmms-eval keys this harness reads but treats as documentation only.
_PASSIVE_KEYS = {
    "task_alias",
    "group_alias",
    "should_decontaminate",
    "doc_to_decontamination_query",
    "use_prompt",
    "full_docs",
    "dataset_config_name",
    "model_specific_prompt_kwargs",
}
#: The aggregation a metric gets when its metric_list entry names none (lmms-eval's registered default;
#: harness.metrics.aggregation holds it). Written out here: loading a config imports no metric code.
DEFAULT_AGGREGATION = {"perplexity": "perplexity"}
_OUTPUT_TYPES = {"generate_until", "multiple_choice", "loglikelihood", "generate_until_multi_round"}
_WHY_REFUSED = {
    "generate_until_agentic": "it runs a tool-using agent loop whose environment lmms-eval's task code drives; "
    "the harness has no such environment",
    "loglikelihood_rolling": "lmms-eval 0.7.3 has no such output type (its tasks and models define none); "
    "score a given text with output_type loglikelihood",
    "generate_visual_cot": "lmms-eval's visual CoT first generates an auxiliary image, then answers from both "
    "images; the harness's backends generate text only",
}


def _output_type(raw: dict[str, Any], where: str) -> str:
    """The task's output type, once checked to be one the harness runs with what it needs."""
    output_type = str(raw.get("output_type", "generate_until"))
    if output_type in _WHY_REFUSED:
        raise TaskConfigError(f"{where}: output_type {output_type!r} is not supported: {_WHY_REFUSED[output_type]}")
    if output_type not in _OUTPUT_TYPES:
        raise TaskConfigError(
            f"{where}: output_type {output_type!r} is not supported yet (supported: {', '.join(sorted(_OUTPUT_TYPES))})"
        )
    if output_type == "generate_until_multi_round" and not isinstance(raw.get("doc_to_text"), FunctionRef):
        raise TaskConfigError(
            f"{where}: output_type generate_until_multi_round needs doc_to_text as a "
            "!function (it is called again with each round's answers)"
        )
    if output_type == "generate_until_multi_round" and raw.get("filter_list"):
        raise TaskConfigError(
            f"{where}: generate_until_multi_round results are tuples of rounds; filter_list does not apply to them"
        )
    if output_type == "loglikelihood" and raw.get("doc_to_target") is None:
        raise TaskConfigError(f"{where}: output_type loglikelihood needs doc_to_target (the scored text)")
    if output_type == "multiple_choice" and raw.get("doc_to_choice") is None:
        raise TaskConfigError(f"{where}: output_type multiple_choice needs doc_to_choice")
    return output_type


@dataclass(frozen=True)
class MetricSpec:
    """One ``metric_list`` entry: which per-sample key, how to aggregate it, which direction is better."""

    metric: str
    aggregation: str | FunctionRef = "mean"
    higher_is_better: bool = True
    #: the entry's other keys: options of lmms-eval's built-in metric (exact_match's ``ignore_case``, ...)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilterStep:
    """One step of a ``filter_list`` pipeline: a built-in filter's name or a ``!function`` filter class."""

    function: str | FunctionRef
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FilterPipeline:
    """A named filter pipeline; metric keys in results are ``"metric,<name>"``."""

    name: str
    steps: tuple[FilterStep, ...]


DEFAULT_FILTERS = (FilterPipeline("none", (FilterStep("take_first"),)),)


@dataclass(frozen=True)
class AggregateMetric:
    """One ``aggregate_metric_list`` entry of a group: which member metric (under which filters) the group
    reports, averaged over its tasks weighted by their scored samples or, without ``weight_by_size``, equally.
    ``aggregation`` is read for lmms-eval's sake; a group's figure is always that weighted mean."""

    metric: str
    filter_list: tuple[str, ...] = ("none",)
    weight_by_size: bool = True
    aggregation: str = "mean"

    @classmethod
    def parse(cls, entries: Any, where: str) -> tuple[AggregateMetric, ...]:
        """A group's list, each entry checked, so a typo fails when the group is read, not after a run."""
        if entries is None:
            return ()
        if not isinstance(entries, list):
            raise TaskConfigError(f"{where}: aggregate_metric_list must be a list")
        out = []
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("metric"), str):
                raise TaskConfigError(f"{where}: each aggregate_metric_list entry needs a 'metric' name, got {entry!r}")
            filters = entry.get("filter_list", "none")
            filters = [filters] if isinstance(filters, str) else filters
            if not isinstance(filters, list) or not filters or not all(isinstance(f, str) for f in filters):
                raise TaskConfigError(
                    f"{where}: aggregate_metric_list filter_list must be a filter name or a list "
                    f"of them, got {entry.get('filter_list')!r}"
                )
            weight = entry.get("weight_by_size", True)
            if not isinstance(weight, bool):
                raise TaskConfigError(
                    f"{where}: aggregate_metric_list weight_by_size must be true or false, got {weight!r}"
                )
            out.append(cls(entry["metric"], tuple(filters), weight, str(entry.get("aggregation", "mean"))))
        return tuple(out)


@dataclass(frozen=True)
class TaskConfig:
    """A task as written in YAML (after ``include`` resolution), in lmms-eval's schema."""

    task: str
    source: Path
    dataset_path: str | None = None
    dataset_name: str | None = None
    dataset_kwargs: dict[str, Any] = field(default_factory=dict)
    test_split: str | None = None
    output_type: str = "generate_until"
    process_docs: FunctionRef | None = None
    doc_to_visual: FunctionRef | str | None = None
    doc_to_text: FunctionRef | str | None = None
    doc_to_messages: FunctionRef | None = None
    doc_to_target: FunctionRef | str | int | None = None
    doc_to_choice: FunctionRef | str | list[Any] | dict[str, Any] | None = None
    target_delimiter: str = " "
    training_split: str | None = None
    validation_split: str | None = None
    num_fewshot: int = 0
    fewshot_split: str | None = None
    fewshot_delimiter: str = "\n\n"
    fewshot_sampler: str = "default"
    description: str | None = None
    process_results: FunctionRef | None = None
    process_results_use_image: bool = False
    metric_list: tuple[MetricSpec, ...] = ()
    filters: tuple[FilterPipeline, ...] = DEFAULT_FILTERS
    generation_kwargs: dict[str, Any] = field(default_factory=dict)
    repeats: int = 1
    cluster_key: str | None = None  # the per-sample field (or doc column) naming the unit docs share
    score_key: str = "score"  # the field of a dict-valued per-sample metric that holds its score
    tags: tuple[str, ...] = ()
    lmms_eval_specific_kwargs: dict[str, Any] = field(default_factory=dict)
    model_specific_target_kwargs: dict[str, Any] = field(default_factory=dict)
    model_specific_generation_kwargs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    harness_turns: tuple[str, ...] = ()
    harness_report: str | None = None
    harness_audit: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def version(self) -> Any:
        """The task's ``metadata.version`` (0 when absent), recorded with its results."""
        return self.metadata.get("version", 0)

    def specific_kwargs(self, model_family: str | None) -> dict[str, Any] | None:
        """The ``lmms_eval_specific_kwargs`` for a model, with lmms-eval's semantics: a block named
        for the model replaces the ``default`` block whole (the two are not merged)."""
        blocks = self.lmms_eval_specific_kwargs
        if not blocks:
            return None
        if model_family and model_family in blocks:
            return dict(blocks[model_family])
        return dict(blocks.get("default", {}))

    def target_kwargs(self, model_family: str | None) -> Any:
        """The ``model_specific_target_kwargs`` value for a model (lmms-eval: the model's entry, else
        ``default``, else none), which a ``doc_to_target`` function gets as its second argument."""
        blocks = self.model_specific_target_kwargs
        if not blocks:
            return None
        return blocks[model_family] if model_family and model_family in blocks else blocks.get("default")

    def generation_kwargs_for(self, model_family: str | None) -> dict[str, Any]:
        """``generation_kwargs`` updated with the model's ``model_specific_generation_kwargs`` entry (else
        its ``default`` entry), as lmms-eval prepares a task for a model."""
        blocks = self.model_specific_generation_kwargs
        if not blocks:
            return dict(self.generation_kwargs)
        extra = blocks[model_family] if model_family and model_family in blocks else blocks.get("default", {})
        return {**self.generation_kwargs, **(extra or {})}

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: Path) -> TaskConfig:
        """Validate a resolved YAML mapping; unknown keys warn, unsupported settings fail clearly."""
        where = f"{source}"
        name = raw.get("task")
        if not isinstance(name, str):
            raise TaskConfigError(f"{where}: 'task' must be a task name string")
        _warn_unknown_keys(raw, where)
        output_type = _output_type(raw, where)
        delimiter = raw.get("target_delimiter", " ")
        if not isinstance(delimiter, str):
            raise TaskConfigError(f"{where}: target_delimiter must be a string, got {delimiter!r}")
        fewshot = _fewshot(raw, where)
        repeats = _repeats(raw, where)
        gen = raw.get("generation_kwargs") or {}
        if not isinstance(gen, dict):
            raise TaskConfigError(f"{where}: generation_kwargs must be a mapping")
        metadata = parse_metadata(raw.get("metadata"), where)
        return cls(
            task=name,
            source=source,
            dataset_path=raw.get("dataset_path"),
            dataset_name=raw.get("dataset_name"),
            dataset_kwargs=dict(raw.get("dataset_kwargs") or {}),
            test_split=raw.get("test_split"),
            output_type=output_type,
            process_docs=raw.get("process_docs"),
            doc_to_visual=raw.get("doc_to_visual"),
            doc_to_text=raw.get("doc_to_text"),
            doc_to_messages=raw.get("doc_to_messages"),
            doc_to_target=raw.get("doc_to_target"),
            doc_to_choice=raw.get("doc_to_choice"),
            target_delimiter=delimiter,
            training_split=raw.get("training_split"),
            validation_split=raw.get("validation_split"),
            description=raw.get("description"),
            **fewshot,
            process_results=raw.get("process_results"),
            process_results_use_image=bool(raw.get("process_results_use_image", False)),
            metric_list=_parse_metrics(raw.get("metric_list"), where, output_type),
            filters=_parse_filters(raw.get("filter_list"), where),
            generation_kwargs=dict(gen),
            **repeats,
            tags=_as_tuple(raw.get("tag")),
            lmms_eval_specific_kwargs=dict(raw.get("lmms_eval_specific_kwargs") or {}),
            model_specific_target_kwargs=_mapping(raw, "model_specific_target_kwargs", where),
            model_specific_generation_kwargs=_mapping(raw, "model_specific_generation_kwargs", where),
            metadata=metadata,
            **_harness_hooks(metadata, where),
            raw=raw,
        )


#: The top-level keys a task may hold besides :class:`TaskConfig`'s fields and the passive ones.
_READ_KEYS = {"tag", "group", "metadata", "filter_list", "fewshot_config"}


def _warn_unknown_keys(raw: dict[str, Any], where: str) -> None:
    """One warning per key the harness neither reads nor knows as documentation (lmms-eval ignores them too)."""
    known = {f.name for f in dataclasses.fields(TaskConfig)} | _PASSIVE_KEYS | _READ_KEYS
    for key in raw:
        if key not in known:
            log.warning("%s: unknown task key %r ignored", where, key)


def _repeats(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """``repeats`` and the keys that say how repeated samples cluster (``cluster_key``, ``score_key``), checked."""
    repeats = raw.get("repeats", 1)
    if not isinstance(repeats, int) or repeats < 1:
        raise TaskConfigError(f"{where}: repeats must be a positive integer, got {repeats!r}")
    cluster_key, score_key = raw.get("cluster_key"), raw.get("score_key", "score")
    if cluster_key is not None and not (isinstance(cluster_key, str) and cluster_key):
        raise TaskConfigError(f"{where}: cluster_key must be a field name, got {cluster_key!r}")
    if not (isinstance(score_key, str) and score_key):
        raise TaskConfigError(f"{where}: score_key must be a field name, got {score_key!r}")
    return {"repeats": repeats, "cluster_key": cluster_key, "score_key": score_key}


_SAMPLERS = ("default", "first_n")  # lmms-eval's samplers.SAMPLER_REGISTRY


def _fewshot(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """``num_fewshot``, ``fewshot_split``, ``fewshot_delimiter`` and ``fewshot_config.sampler``, checked."""
    shots = raw.get("num_fewshot") or 0
    if not isinstance(shots, int) or isinstance(shots, bool) or shots < 0:
        raise TaskConfigError(f"{where}: num_fewshot must be a whole number >= 0, got {shots!r}")
    config = raw.get("fewshot_config") or {}
    if not isinstance(config, dict):
        raise TaskConfigError(f"{where}: fewshot_config must be a mapping")
    sampler = config.get("sampler", "default")
    if sampler not in _SAMPLERS:
        raise TaskConfigError(f"{where}: fewshot_config sampler {sampler!r} is unknown (known: {', '.join(_SAMPLERS)})")
    delimiter = raw.get("fewshot_delimiter", "\n\n")
    if not isinstance(delimiter, str):
        raise TaskConfigError(f"{where}: fewshot_delimiter must be a string, got {delimiter!r}")
    return {
        "num_fewshot": shots,
        "fewshot_split": raw.get("fewshot_split"),
        "fewshot_delimiter": delimiter,
        "fewshot_sampler": sampler,
    }


def _mapping(raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise TaskConfigError(f"{where}: {key} must be a mapping of model names to values")
    return dict(value)


def _as_tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def parse_metadata(value: Any, where: str) -> dict[str, Any]:
    """``metadata`` comes as a dict or, in older lmms-eval tasks, as a list of one-key dicts."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        merged: dict[str, Any] = {}
        for item in value:
            merged.update(item)
        return merged
    raise TaskConfigError(f"{where}: metadata must be a mapping or a list of mappings")


#: The most follow-up turns a multi-turn task may ask (each is a request per sample of every doc).
MAX_TURNS = 32


def _harness_hooks(metadata: dict[str, Any], where: str) -> dict[str, Any]:
    """The harness's own metadata keys, typed and checked once, so no hook ever reads raw metadata."""
    turns = metadata.get("harness_turns") or []
    if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
        raise TaskConfigError(f"{where}: metadata harness_turns must be a list of prompts (strings)")
    if len(turns) > MAX_TURNS:
        raise TaskConfigError(f"{where}: metadata harness_turns holds {len(turns)} turns; at most {MAX_TURNS}")
    report = metadata.get("harness_report")
    if report is not None and (not isinstance(report, str) or "." not in report):
        raise TaskConfigError(f"{where}: metadata harness_report must be 'module.function', got {report!r}")
    audit = metadata.get("harness_audit")  # lmms-eval ignores the key
    if audit is not None and not isinstance(audit, str):
        # Only its type here: which tags exist is the protocols' to say (harness.protocols.base.check_audit_tag)
        raise TaskConfigError(f"{where}: metadata harness_audit must be a protocol's audit tag, got {audit!r}")
    return {"harness_turns": tuple(turns), "harness_report": report, "harness_audit": audit}


#: The metrics a task without ``metric_list`` reports (lmms-eval's ``DEFAULT_METRIC_REGISTRY``).
DEFAULT_METRICS = {
    "loglikelihood": ("perplexity", "acc"),
    "multiple_choice": ("acc", "acc_norm"),
    "generate_until": ("exact_match",),
    "generate_until_multi_round": ("exact_match",),
}


def _parse_metrics(value: Any, where: str, output_type: str) -> tuple[MetricSpec, ...]:
    if value is None:
        return tuple(
            MetricSpec(m, DEFAULT_AGGREGATION.get(m, "mean"), m != "perplexity")
            for m in DEFAULT_METRICS.get(output_type, ())
        )
    if not isinstance(value, list):
        raise TaskConfigError(f"{where}: metric_list must be a list")
    specs = []
    for entry in value:
        if not isinstance(entry, dict) or "metric" not in entry:
            raise TaskConfigError(f"{where}: each metric_list entry needs a 'metric' key, got {entry!r}")
        specs.append(
            MetricSpec(
                metric=str(entry["metric"]),
                aggregation=entry.get("aggregation", DEFAULT_AGGREGATION.get(str(entry["metric"]), "mean")),
                higher_is_better=bool(entry.get("higher_is_better", True)),
                options={k: v for k, v in entry.items() if k not in ("metric", "aggregation", "higher_is_better")},
            )
        )
    return tuple(specs)


def _parse_filters(value: Any, where: str) -> tuple[FilterPipeline, ...]:
    if value is None:
        return DEFAULT_FILTERS
    pipelines = []
    for entry in value:
        if not isinstance(entry, dict) or "name" not in entry:
            raise TaskConfigError(f"{where}: each filter_list entry needs a 'name'")
        steps = []
        for step in entry.get("filter") or []:
            if not isinstance(step, dict):
                raise TaskConfigError(
                    f"{where}: filter {entry['name']!r}: each step must be a mapping with a 'function', got {step!r}"
                )
            kwargs = {k: v for k, v in step.items() if k != "function"}
            function = step.get("function")
            steps.append(FilterStep(function if isinstance(function, FunctionRef) else str(function), kwargs))
        pipelines.append(FilterPipeline(str(entry["name"]), tuple(steps)))
    return tuple(pipelines)
