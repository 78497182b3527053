"""``open_task`` is the one way a task is opened: prompting and scoring are built in ``engine/tasks.py`` and
nowhere else, over one module scope per opened task."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.engine.tasks import open_task_code
from harness.results.schema import SampleRecord
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config
from tests.conftest import write

ROOT = Path(__file__).resolve().parents[2]
OPENERS = {"TaskPrompts", "TaskScorer"}

# doc_to_text counts the prompts it built in a module-level list; process_results scores that count
UTILS = """\
BUILT = []


def doc_to_text(doc):
    BUILT.append(doc["question"])
    return doc["question"]


def process_results(doc, results):
    return {"prompts_built": len(BUILT)}
"""

TASK = """\
task: shared
dataset_path: x/y
test_split: test
doc_to_text: !function utils.doc_to_text
doc_to_target: answer
process_results: !function utils.process_results
metric_list:
  - metric: prompts_built
"""


def _constructions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OPENERS
    ]


def test_only_open_task_builds_a_tasks_prompting_and_scoring() -> None:
    opener = ROOT / "harness" / "engine" / "tasks.py"
    found = [
        where
        for folder in ("harness", "builders", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != opener
        for where in _constructions(path)
    ]
    assert found == []
    assert {line.split()[-1] for line in _constructions(opener)} == OPENERS


def test_prompting_and_scoring_of_one_opened_task_share_its_module_scope(tmp_path: Path) -> None:
    """Task code may keep state between its prompt and its scoring functions (one module, as lmms-eval
    imports it once); a second opening starts from a fresh module."""
    write(tmp_path / "utils.py", UTILS)
    path = write(tmp_path / "shared.yaml", TASK)
    config = TaskConfig.from_dict(load_yaml_config(path), path)
    doc = {"question": "q", "answer": "a"}
    for _ in range(2):
        code = open_task_code(config, None)
        code.prompts.text(doc)
        code.prompts.text(doc)
        record = SampleRecord(task="shared", doc_id=0, doc_hash="h", doc=doc, responses=["a"])
        assert code.scorer.score(record, doc).metrics == {"prompts_built,none": 2}
