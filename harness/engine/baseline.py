"""``harness eval --baseline RUN_OR_FILE``: each task compared with a stored run on the same docs, as lmms-eval 0.7.3
compares (``evaluator.py``'s baseline block, ``baselines/loader.py``): a paired t-test of the per-doc scores
written into the task's results under lmms-eval's keys, and the power analysis of that comparison.

The baseline is a harness run folder (its ``samples_<task>.jsonl``) or an lmms-eval samples file
(``*_samples_<task>.jsonl``, read for every task as lmms-eval reads it). A doc's score is read as lmms-eval
reads a logged sample: the figure named by the task's ``score_key`` (a number, or a mapping's ``score``), else
the first figure whose name ends in ``_score``; a sample is logged once per filter pipeline.
"""

from __future__ import annotations

import json
import logging
import math
import os
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.metrics.uncertainty import paired_ttest, power_analysis
from harness.results.jsonl import check_depth, jsonl_lines
from harness.results.metric_key import MetricKey
from harness.results.schema import BaselineComparison, SampleRecord, read_samples
from harness.taskspec.config import TaskConfig

log = logging.getLogger(__name__)

#: lmms-eval's ``--effect-size`` default: the difference a power analysis asks about (3 points).
EFFECT_SIZE = 0.03


def display_name(source: str) -> str:
    """lmms-eval's short name of a baseline argument (``get_baseline_display_name``): a path's file name
    without its extension, cut to 30 characters."""
    if "/" in source or "\\" in source:
        return os.path.splitext(os.path.basename(source))[0][:30]
    return source


def _number(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict) and isinstance(value.get("score"), int | float):
        return float(value["score"])
    return None


def _logged_samples(records: list[SampleRecord], config: TaskConfig) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each record's figures as lmms-eval logs a sample: once per filter pipeline, keyed by metric name."""
    for pipe in config.filters:
        for record in records:
            parsed = ((MetricKey.parse(text), value) for text, value in record.metrics.items())
            yield record.doc_id, {k.metric: v for k, v in parsed if k is not None and k.filter == pipe.name}


def sample_score(sample: dict[str, Any], score_key: str) -> float | None:
    """A logged sample's score as lmms-eval's baseline comparison reads the current run's: ``score_key``'s
    value, else the first ``*_score`` field's."""
    if score_key in sample and (score := _number(sample[score_key])) is not None:
        return score
    for key, value in sample.items():
        if key.endswith("_score") and key != score_key and (score := _number(value)) is not None:
            return score
    return None


def lmms_sample_score(sample: dict[str, Any]) -> float | None:
    """An lmms-eval samples file's line as its baseline loader scores it (``_extract_score_from_sample``): the
    first field whose name holds ``score`` (a number, or a prediction and answer compared), else the first
    filtered answer against the target."""
    for key, value in sample.items():
        if "score" in key.lower():
            if isinstance(value, int | float):
                return float(value)
            if isinstance(value, dict):
                pred = value.get("pred_answer") or value.get("pred")
                answer = value.get("answer") or value.get("target")
                if pred and answer:
                    return 1.0 if str(pred).strip().upper() == str(answer).strip().upper() else 0.0
    target, filtered = sample.get("target"), sample.get("filtered_resps")
    if target and filtered:
        pred = filtered[0] if isinstance(filtered, list) else filtered
        if isinstance(pred, list):
            pred = pred[0] if pred else ""
        return 1.0 if str(pred).strip().upper() == str(target).strip().upper() else 0.0
    return None


def check_source(source: str) -> None:
    """Refuse, before any model loads, a baseline that is neither a run folder nor a file."""
    path = Path(source)
    if path.is_dir() and not (path / "results.json").is_file():
        raise HarnessError(f"--baseline {source}: a folder, but no run folder (no results.json)")
    if not path.exists():
        raise HarnessError(
            f"--baseline {source}: no such run folder or samples file (lmms-eval's presets and hf:// baselines "
            "need the Hub; pass a local copy)"
        )


def baseline_scores(source: str, task: str, config: TaskConfig) -> dict[int, float]:
    """doc_id -> the baseline's score of it (the last one read wins, as in lmms-eval); empty when the baseline
    holds no samples of ``task``. A path that is neither a run folder nor a file fails in one line."""
    check_source(source)
    path = Path(source)
    if path.is_dir():
        if not (path / f"samples_{task}.jsonl").is_file():
            return {}
        logged = _logged_samples(read_samples(path, task), config)
        return {d: s for d, sample in logged if (s := sample_score(sample, config.score_key)) is not None}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise HarnessError(f"--baseline {source}: unreadable ({exc})") from None
    scores: dict[int, float] = {}
    for number, line in jsonl_lines(text):
        check_depth(line, f"--baseline {source}: line {number}")
        try:
            sample = json.loads(line)
        except ValueError:
            raise HarnessError(f"--baseline {source}: line {number} is not JSON") from None
        doc_id = sample.get("doc_id") if isinstance(sample, dict) else None
        if isinstance(doc_id, int) and (score := lmms_sample_score(sample)) is not None:
            scores[doc_id] = score
    return scores


def compare(source: str, config: TaskConfig, records: list[SampleRecord]) -> BaselineComparison | None:
    """One task's paired comparison with the baseline; None when no doc has a score on both sides (lmms-eval
    then writes nothing)."""
    before = baseline_scores(source, config.task, config)
    current: list[float] = []
    baseline: list[float] = []
    for doc_id, sample in _logged_samples(records, config):
        score = sample_score(sample, config.score_key)
        if doc_id in before and score is not None:
            current.append(score)
            baseline.append(before[doc_id])
    if not current:
        log.info("baseline: task %s has no doc scored on both sides (score_key %r)", config.task, config.score_key)
        return None
    test = paired_ttest(current, baseline)
    power, why = None, None
    if len(current) < 2:
        why = "fewer than 2 paired docs"
    else:
        std_a, std_b = statistics.stdev(current), statistics.stdev(baseline)
        rho = statistics.correlation(current, baseline) if std_a > 0 and std_b > 0 else 0.0
        try:
            power = power_analysis(EFFECT_SIZE, std_a, std_b, correlation=rho, current_n=len(current)).__dict__
        except ValueError:
            why = "every paired difference is the same, so the power analysis has no spread to work with"
    return BaselineComparison(
        baseline=display_name(source),
        source=str(Path(source).resolve()),
        current_mean=sum(current) / len(current),
        baseline_mean=sum(baseline) / len(baseline),
        **{k: _finite(v) for k, v in test.__dict__.items()},
        power=power,
        no_power=why,
    )


def _finite(value: float | int) -> float | int | None:
    return value if isinstance(value, int) or math.isfinite(value) else None


def lmms_keys(comparison: BaselineComparison) -> dict[str, Any]:
    """The fields lmms-eval writes into the task's results (its scores in points: x 100)."""
    return {
        "paired_baseline": comparison.baseline,
        "paired_baseline_score": comparison.baseline_mean * 100,
        "paired_ci_lower": None if comparison.ci_lower is None else comparison.ci_lower * 100,
        "paired_ci_upper": None if comparison.ci_upper is None else comparison.ci_upper * 100,
        "paired_pvalue": comparison.p_value,
    }


#: The results keys a baseline comparison adds; no re-scoring recomputes them (the baseline is not there).
BASELINE_KEYS = ("paired_baseline", "paired_baseline_score", "paired_ci_lower", "paired_ci_upper", "paired_pvalue")


def compare_all(
    source: str,
    configs: dict[str, TaskConfig],
    samples: dict[str, list[SampleRecord]],
    results: dict[str, dict[str, Any]],
) -> dict[str, BaselineComparison]:
    """Every task's comparison; lmms-eval's keys are added to its ``results`` entry."""
    out = {}
    for task, config in configs.items():
        comparison = compare(source, config, samples[task])
        if comparison is not None:
            results[task].update(lmms_keys(comparison))
            out[task] = comparison
    return out
