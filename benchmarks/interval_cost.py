"""What a task's 95% intervals cost beside its aggregation: a closed-form CLT interval of a ``mean`` and the
1000-resample bootstrap of a task's own ``!function`` aggregation, on synthetic 0/1 scores.

Usage: python benchmarks/interval_cost.py [--docs 1000 10000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.engine.tasks import open_task_code
from harness.results.schema import SampleRecord
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config

UTILS = """\
def process(doc, results):
    right = int(results[0] == doc["answer"])
    return {"acc": right, "judged": {"correct": right}}


def rate(items):
    return sum(i["correct"] for i in items) / len(items)
"""
TASK = """\
task: cost
dataset_path: x/y
test_split: test
doc_to_text: "{{question}}"
process_results: !function utils.process
metric_list:
  - metric: acc
    aggregation: mean
  - metric: judged
    aggregation: !function utils.rate
"""


def main() -> None:
    """Prints, per number of docs, the seconds of aggregation and of intervals and their ratio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "utils.py").write_text(UTILS)
        (Path(tmp) / "cost.yaml").write_text(TASK)
        config = TaskConfig.from_dict(load_yaml_config(Path(tmp) / "cost.yaml"), Path(tmp) / "cost.yaml")
        scorer = open_task_code(config, None).scorer
        for n in args.docs:
            records = []
            for i in range(n):
                doc = {"question": "q", "answer": "a"}
                record = SampleRecord(task="cost", doc_id=i, doc_hash=str(i), doc=doc, responses=["ab"[i % 3 == 0]])
                records.append(scorer.score(record, doc))
            start = time.perf_counter()
            results, _ = scorer.aggregate(records)
            aggregated = time.perf_counter() - start
            start = time.perf_counter()
            intervals = scorer.intervals(records, results)
            made = time.perf_counter() - start
            methods = ", ".join(f"{k}: {v.method}" for k, v in intervals.items())
            print(
                f"{n} docs: aggregate {aggregated:.2f} s, intervals {made:.2f} s ({made / aggregated:.0f}x; {methods})"
            )


if __name__ == "__main__":
    main()
