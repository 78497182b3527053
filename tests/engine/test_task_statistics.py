"""A task's statistics as the engine writes them: lmms-eval 0.7.3's ``_stderr_clt``, ``_stderr_clustered`` and
stability keys in ``results``, and each figure's 95% interval, on hand-computed cases (no model: records are
scored by the task's own code)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.engine.lmms_args import aggregation_args
from harness.engine.task_scoring import TaskScorer
from harness.engine.tasks import open_task_code
from harness.metrics.uncertainty import Z95
from harness.results.interval import Interval
from harness.results.schema import SampleRecord
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config
from tests.conftest import write

UTILS = """\
def process(doc, results):
    right = int(results[0] == doc["answer"])
    return {"acc": right, "judged": {"correct": right, "video": doc["video"]}, "big": 10 * right}


def rate(items):
    return sum(i["correct"] for i in items) / len(items)


def logged(items, args):
    return sum(i["correct"] for i in items)
"""


def _config(tmp_path: Path, body: str) -> TaskConfig:
    write(tmp_path / "utils.py", UTILS)
    path = write(
        tmp_path / "t.yaml",
        'task: t\ndataset_path: x/y\ntest_split: test\ndoc_to_text: "{{question}}"\n'
        "process_results: !function utils.process\n" + body,
    )
    return TaskConfig.from_dict(load_yaml_config(path), path)


METRICS = """\
metric_list:
  - metric: acc
    aggregation: mean
  - metric: judged
    aggregation: !function utils.rate
  - metric: big
    aggregation: median
"""
# four docs: two videos, answers right, right | wrong, right
DOCS = [
    {"question": "q", "answer": "a", "video": "v1"},
    {"question": "q", "answer": "a", "video": "v1"},
    {"question": "q", "answer": "b", "video": "v2"},
    {"question": "q", "answer": "a", "video": "v2"},
]


def _records(scorer: TaskScorer, answers: list[list[str]]) -> list[SampleRecord]:
    out = []
    for i, (doc, responses) in enumerate(zip(DOCS, answers, strict=True)):
        record = SampleRecord(task="t", doc_id=i, doc_hash=str(i), doc=doc, responses=responses)
        out.append(scorer.score(record, doc))
    return out


def test_clt_and_clustered_stderrs_as_lmms_eval_writes_them(tmp_path: Path) -> None:
    config = _config(tmp_path, "cluster_key: video\nscore_key: correct\n" + METRICS)
    scorer = open_task_code(config, None).scorer
    results, _ = scorer.aggregate(_records(scorer, [["a"], ["a"], ["a"], ["a"]]))
    # acc = (1, 1, 0, 1): s_bar 3/4, s = 1/2, SE_CLT = 1/4
    assert results["acc_stderr_clt,none"] == pytest.approx(0.25)
    # plain numbers carry no cluster id: lmms-eval writes N/A
    assert results["acc_stderr_clustered,none"] == "N/A"
    # dicts carry score_key and cluster_key: d = (1/4, 1/4, -3/4, 1/4); cross terms v1: 2 * 1/16, v2: 2 * -3/16
    clustered = math.sqrt(1 / 16 + (2 / 16 - 6 / 16) / 16)
    assert results["judged_stderr_clt,none"] == pytest.approx(0.25)
    assert results["judged_stderr_clustered,none"] == pytest.approx(clustered)
    # a number is its own score (10 * right): s = 5, SE = 5 / 2
    assert results["big_stderr_clt,none"] == pytest.approx(2.5)
    assert list(results)[:5] == [
        "alias",
        "acc,none",
        "acc_stderr,none",
        "acc_stderr_clt,none",
        "acc_stderr_clustered,none",
    ]
    assert not any("expected_accuracy" in k for k in results)  # one answer per doc: no stability keys


def test_a_score_that_is_no_number_is_left_out_of_the_stderrs(tmp_path: Path) -> None:
    """lmms-eval's np.std fails on a text score; the harness leaves that doc out of the CLT standard error."""
    from harness.engine.lmms_statistics import stderrs
    from harness.results.metric_key import MetricKey

    config = _config(tmp_path, METRICS)
    out = stderrs(MetricKey("judged"), [{"score": 1}, {"score": "yes"}, {"score": 0}, {"other": 1}, None], config)
    assert out == {"judged_stderr_clt,none": math.sqrt(0.5) / math.sqrt(2), "judged_stderr_clustered,none": "N/A"}


def test_one_doc_gives_lmms_eval_s_n_a_and_an_interval_that_says_why(tmp_path: Path) -> None:
    scorer = open_task_code(_config(tmp_path, METRICS), None).scorer
    records = _records(scorer, [["a"], ["a"], ["a"], ["a"]])[:1]
    results, _ = scorer.aggregate(records)
    assert results["acc_stderr_clt,none"] == results["acc_stderr_clustered,none"] == "N/A"
    interval = scorer.intervals(records, results)["acc,none"]
    assert not interval.defined and interval.reason == "fewer than 2 docs" and interval.n == 1


def test_each_figure_gets_its_interval_by_its_aggregation(tmp_path: Path) -> None:
    scorer = open_task_code(_config(tmp_path, METRICS), None).scorer
    records = _records(scorer, [["a"], ["a"], ["a"], ["a"]])
    results, _ = scorer.aggregate(records)
    intervals = scorer.intervals(records, results)
    acc = intervals["acc,none"]  # a mean over independent docs: CLT, held to [0, 1] (0/1 scores)
    assert (acc.method, acc.n, acc.unit) == ("clt", 4, "doc")
    assert (acc.low, acc.high) == pytest.approx((0.75 - Z95 * 0.25, 1.0))
    judged = intervals["judged,none"]  # the task's own aggregation, run again on resampled docs
    assert (judged.method, judged.n) == ("bootstrap", 4) and judged.low is not None and judged.high == 1.0
    big = intervals["big,none"]  # a median: bootstrap too
    assert big.method == "bootstrap" and (big.low, big.high) == (0.0, 10.0)
    assert scorer.intervals(records, results) == intervals  # seeded: re-scoring gives the same intervals


def test_the_task_s_unit_clusters_a_mean_and_resamples_whole_units(tmp_path: Path) -> None:
    scorer = open_task_code(_config(tmp_path, "cluster_key: video\n" + METRICS), None).scorer
    records = _records(scorer, [["a"], ["a"], ["a"], ["a"]])
    results, _ = scorer.aggregate(records)
    intervals = scorer.intervals(records, results)
    acc = intervals["acc,none"]  # the doc column names the unit: Miller's eq. 4 over 2 videos
    assert (acc.method, acc.n, acc.unit) == ("clustered", 2, "video")
    clustered = math.sqrt(1 / 16 + (2 / 16 - 6 / 16) / 16)
    assert acc.low == pytest.approx(0.75 - Z95 * clustered)
    assert intervals["judged,none"].method == "cluster_bootstrap" and intervals["judged,none"].n == 2


def test_an_aggregation_taking_args_is_not_run_again(tmp_path: Path) -> None:
    body = "metric_list:\n  - metric: judged\n    aggregation: !function utils.logged\n"
    scorer = open_task_code(_config(tmp_path, body), None).scorer
    records = _records(scorer, [["a"], ["a"], ["a"], ["a"]])
    results, _ = scorer.aggregate(records, aggregation_args(tmp_path, "m", ["t"]))
    (interval,) = scorer.intervals(records, results).values()
    assert (
        interval.reason == "the aggregation takes lmms-eval's args (it may write files), so it is not run on resamples"
    )


def test_all_docs_alike_get_wilson_for_a_share_and_a_reason_otherwise(tmp_path: Path) -> None:
    scorer = open_task_code(_config(tmp_path, METRICS), None).scorer
    records = _records(scorer, [["z"], ["z"], ["z"], ["z"]])  # every answer wrong
    results, _ = scorer.aggregate(records)
    intervals = scorer.intervals(records, results)
    acc = intervals["acc,none"]
    assert acc.method == "wilson" and acc.low == 0.0 and acc.high == pytest.approx(Z95**2 / (4 + Z95**2))
    assert results["acc_stderr_clt,none"] == 0.0  # lmms-eval's key keeps its zero
    assert intervals["big,none"].reason == "every resample of the 4 docs gives 0"
    clustered = open_task_code(_config(tmp_path, "cluster_key: video\n" + METRICS), None).scorer
    records = _records(clustered, [["z"], ["z"], ["z"], ["z"]])
    acc = clustered.intervals(records, clustered.aggregate(records)[0])["acc,none"]  # Wilson over the 2 videos
    assert (acc.method, acc.n, acc.unit, acc.low) == ("wilson", 2, "video", 0.0)
    assert acc.high == pytest.approx(Z95**2 / (2 + Z95**2))


def test_repeats_give_lmms_eval_s_stability_keys_and_their_intervals(tmp_path: Path) -> None:
    scorer = open_task_code(_config(tmp_path, "score_key: correct\n" + METRICS), None).scorer
    answers = [["a", "a", "z"], ["z", "z", "z"], ["b", "b", "b"], ["a", "z", "z"]]
    records = _records(scorer, answers)
    assert records[0].response_metrics["acc,none"] == [1, 1, 0]  # each answer scored alone
    results, _ = scorer.aggregate(records)
    # per doc: [1,1,0] [0,0,0] [1,1,1] [1,0,0]
    assert results["acc_expected_accuracy,none"] == 0.5
    assert results["acc_consensus_accuracy,none"] == 0.5
    assert results["acc_internal_variance,none"] == pytest.approx(1 / 6)
    assert results["acc_consistency_rate,none"] == 0.5
    assert results["judged_expected_accuracy,none"] == 0.5  # dict values read through score_key ("correct")
    intervals = scorer.intervals(records, results)
    ea = intervals["acc_expected_accuracy,none"]  # 12 answers clustered by doc: Miller's eq. 4
    d = [0.5, 0.5, -0.5, -0.5, -0.5, -0.5, 0.5, 0.5, 0.5, 0.5, -0.5, -0.5]
    cross = sum(sum(d[i : i + 3]) ** 2 - sum(x * x for x in d[i : i + 3]) for i in range(0, 12, 3)) / 144
    se = math.sqrt(sum(x * x for x in d) / 11 / 12 + cross)
    assert (ea.method, ea.n, ea.unit) == ("clustered", 4, "doc")
    assert (ea.low, ea.high) == pytest.approx((0.5 - Z95 * se, 0.5 + Z95 * se))
    cr = intervals["acc_consistency_rate,none"]  # (0, 1, 1, 0): 0.5 +- 1.96 sqrt(1/3) / 2, a share within [0, 1]
    assert cr.method == "clt" and (cr.low, cr.high) == (0.0, 1.0)
    iv = intervals["acc_internal_variance,none"]  # (1/3, 0, 0, 1/3): a variance, not a share, so not held
    assert iv.method == "clt" and iv.low == pytest.approx(1 / 6 - Z95 * math.sqrt(1 / 27) / 2)


def test_a_group_pools_its_members_intervals() -> None:
    from harness.engine.intervals import group_interval

    a, b = Interval.of(0.3, 0.7, "clt", 10), Interval.of(0.5, 0.9, "clustered", 5, "video")
    se_a, se_b = 0.2 / Z95, 0.2 / Z95
    pooled = group_interval(0.6, [(a, 10), (b, 5)])
    se = math.sqrt((10 / 15) ** 2 * se_a**2 + (5 / 15) ** 2 * se_b**2)
    assert (pooled.method, pooled.n, pooled.unit) == ("clustered", 15, "unit")
    assert (pooled.low, pooled.high) == pytest.approx((0.6 - Z95 * se, 0.6 + Z95 * se))
    boot = Interval.of(0.1, 0.2, "bootstrap", 3)
    assert (
        group_interval(0.5, [(a, 1), (boot, 1)]).reason
        == "a member task's interval is a bootstrap one, so none is pooled"
    )
    assert group_interval(0.5, [(a, 1), (None, 1)]).reason == "a member task has no interval, so none is pooled"
