"""``--baseline``: lmms-eval 0.7.3's paired t-test of each task against a stored run (its keys, its way of reading
a doc's score) and its power analysis, on hand-computed cases; a baseline that cannot be read fails in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from harness.engine.baseline import compare, compare_all, display_name, lmms_sample_score
from harness.engine.report import summary_table
from harness.engine.runner import EvalOptions, validate_tasks
from harness.engine.tasks import open_task_code
from harness.errors import HarnessError
from harness.results.schema import SampleRecord, parse_run
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config
from tests.conftest import write
from tests.results.test_results_schema import V1_RESULTS

UTILS = """\
def process(doc, results):
    return {"score": int(results[0] == doc["answer"]), "other": 0.5}
"""
BODY = """\
process_results: !function utils.process
metric_list:
  - metric: score
    aggregation: mean
  - metric: other
    aggregation: mean
"""
CURRENT = [1, 1, 0, 1]  # the answers below score (1, 1, 0, 1)
BEFORE = [0, 1, 0, 0]  # d = (1, 0, 0, 1): d_bar 1/2, se sqrt(1/12), t sqrt(3), 3 degrees of freedom


def _task(tmp_path: Path, body: str = BODY) -> TaskConfig:
    write(tmp_path / "task" / "utils.py", UTILS)
    path = write(
        tmp_path / "task" / "t.yaml",
        'task: t\ndataset_path: x/y\ntest_split: test\ndoc_to_text: "{{question}}"\n' + body,
    )
    return TaskConfig.from_dict(load_yaml_config(path), path)


def _records(config: TaskConfig) -> list[SampleRecord]:
    scorer = open_task_code(config, None).scorer
    out = []
    for i, answer in enumerate(["a", "a", "z", "a"]):
        doc = {"question": "q", "answer": "a"}
        out.append(scorer.score(SampleRecord(task="t", doc_id=i, doc_hash=str(i), doc=doc, responses=[answer]), doc))
    return out


def _lmms_file(tmp_path: Path) -> Path:
    lines = [{"doc_id": i, "doc": {}, "target": "a", "t_score": s} for i, s in enumerate(BEFORE)]
    return write(tmp_path / "lmms" / "model_samples_t.jsonl", "".join(json.dumps(x) + "\n" for x in lines))


def _check_paired(keys: dict[str, object]) -> None:
    t_crit = stats.t.ppf(0.975, 3)
    assert keys["paired_baseline_score"] == 25.0  # the baseline's mean, in points
    assert keys["paired_ci_lower"] == pytest.approx((0.5 - t_crit * math.sqrt(1 / 12)) * 100)
    assert keys["paired_ci_upper"] == pytest.approx((0.5 + t_crit * math.sqrt(1 / 12)) * 100)
    assert keys["paired_pvalue"] == pytest.approx(stats.ttest_rel(CURRENT, BEFORE).pvalue)


def test_an_lmms_eval_samples_file_as_baseline_gives_lmms_eval_s_keys(tmp_path: Path) -> None:
    config = _task(tmp_path)
    results: dict[str, dict[str, object]] = {"t": {"alias": "t"}}
    source = str(_lmms_file(tmp_path))
    (comparison,) = compare_all(source, {"t": config}, {"t": _records(config)}, results).values()
    assert results["t"]["paired_baseline"] == "model_samples_t"  # lmms-eval's display name of a path
    _check_paired(results["t"])
    assert (comparison.n, comparison.current_mean, comparison.mean_diff) == (4, 0.75, 0.5)
    assert comparison.t_stat == pytest.approx(math.sqrt(3))
    # power for 3 points at n = 4, sigma_a = 1/2, sigma_b = 1/2, rho = 1/3 (Pearson of the pairs)
    power = comparison.power
    assert power is not None and power["correlation"] == pytest.approx(1 / 3) and power["current_n"] == 4
    sigma = math.sqrt(0.25 + 0.25 - 2 / 3 * 0.25)
    assert power["min_detectable_effect"] == round((1.959963985 + 0.841621234) * sigma / 2, 4)


def test_a_run_folder_as_baseline(tmp_path: Path) -> None:
    config = _task(tmp_path)
    before = [
        r.model_copy(update={"metrics": {"score,none": s}}) for r, s in zip(_records(config), BEFORE, strict=True)
    ]
    run = tmp_path / "run"
    write(run / "results.json", "{}")
    write(run / "samples_t.jsonl", "".join(r.model_dump_json() + "\n" for r in before))
    comparison = compare(str(run), config, _records(config))
    assert comparison is not None and comparison.baseline == "run" and comparison.n == 4
    assert comparison.p_value == pytest.approx(stats.ttest_rel(CURRENT, BEFORE).pvalue)


def test_no_score_figure_means_no_comparison_and_the_table_says_why(tmp_path: Path) -> None:
    config = _task(tmp_path, BODY.replace("metric: score", "metric: acc").replace('"score"', '"acc"'))
    write(tmp_path / "task" / "utils.py", UTILS.replace('"score"', '"acc"'))
    assert compare(str(_lmms_file(tmp_path)), config, _records(config)) is None
    run = parse_run({**V1_RESULTS, "config": {**V1_RESULTS["config"], "baseline": "old/run"}})  # type: ignore[dict-item]
    assert "Baseline old/run: no doc of shapes_color has a score on both sides." in summary_table(run)


def test_lmms_eval_s_baseline_reader() -> None:
    assert lmms_sample_score({"videomme_perception_score": {"pred_answer": "b ", "answer": "B"}}) == 1.0
    assert lmms_sample_score({"Score": 0.25}) == 0.25
    assert lmms_sample_score({"target": "Yes", "filtered_resps": [["yes"]]}) == 1.0
    assert lmms_sample_score({"target": "", "filtered_resps": ["x"]}) is None
    assert display_name("runs/a-very-long-name-of-a-baseline-file.jsonl") == "a-very-long-name-of-a-baseline"
    assert display_name("qwen25vl") == "qwen25vl"


def test_a_baseline_that_is_not_there_fails_before_any_model_loads(tmp_path: Path) -> None:
    opts = EvalOptions(tasks=["shapes_color"], baseline=str(tmp_path / "missing"))
    with pytest.raises(HarnessError, match=r"--baseline .*missing: no such run folder or samples file"):
        validate_tasks(opts)
    (tmp_path / "folder").mkdir()
    with pytest.raises(HarnessError, match=r"a folder, but no run folder \(no results.json\)"):
        validate_tasks(EvalOptions(tasks=["shapes_color"], baseline=str(tmp_path / "folder")))


def test_the_leaderboard_compares_the_claim_without_the_baseline_fields() -> None:
    """A submission carries no baseline, so re-scoring cannot make its paired_* keys: they are no mismatch."""
    from harness.leaderboard.checks import Mismatch
    from harness.leaderboard.comparison import compare
    from harness.results.metric_key import MetricKey

    claimed = {"acc,none": 0.5, "paired_baseline": "run", "paired_pvalue": 0.2, "paired_ci_lower": -3.0}
    assert compare(claimed, {"acc,none": 0.5}, 1e-9) == []
    differing = compare(claimed, {"acc,none": 0.4}, 1e-9)
    assert differing == [Mismatch(MetricKey("acc"), 0.5, 0.4)]
    assert differing[0].as_json() == {"metric": "acc,none", "claimed": 0.5, "recomputed": 0.4}
