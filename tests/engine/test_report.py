"""What a run prints beside its numbers: the notes under the summary table for `-` figures (unparsed
answers, figures no sample has) and the labels of the progress bars (per turn, none when empty)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import write

# A task whose scoring never parses an answer (`parsed` is None on every sample) and gives `rare` on no
# sample (a figure that applies to no answer), with one follow-up turn.
TASK = """\
task: shapes_unread
dataset_path: vlm-audit/shapes
test_split: test
doc_to_visual: !function utils.doc_to_visual
doc_to_text: "What color is the {{ kind }}?"
doc_to_target: color
process_results: !function utils.process_unread
metric_list:
  - metric: parsed
    aggregation: mean
  - metric: rare
    aggregation: mean
  - metric: length
    aggregation: mean
generation_kwargs:
  max_new_tokens: 4
metadata:
  harness_turns:
    - "Why?"
"""

UTILS = """\
def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def process_unread(doc, results):
    return {"parsed": None, "length": float(len(results[0]))}
"""


@pytest.fixture
def unread_task(tmp_path: Path) -> Path:
    folder = tmp_path / "tasks"
    write(folder / "unread.yaml", TASK)
    write(folder / "utils.py", UTILS)
    return folder


def run_eval(unread_task: Path, data_dir: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "eval",
            "--model",
            "tiny:qwen2_vl",
            "--tasks",
            "shapes_unread",
            "--include-path",
            str(unread_task),
            "--data-dir",
            str(data_dir),
            "--limit",
            "2",
            "--output",
            str(out),
            *extra,
        ]
    )


def test_dash_figures_say_why_and_where_the_answers_are(
    unread_task: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_eval(unread_task, data_dir, tmp_path / "runs") == 0
    out = capsys.readouterr().out
    (run_dir,) = (tmp_path / "runs").glob("*/*")
    assert "| shapes_unread | parsed | none | - | N/A | none: the figure has no value | - | 2 | 0 | 2 |" in out
    assert "| shapes_unread | rare | none | - | N/A | none: the figure has no value | - | 2 | 0 | 0 |" in out
    # a figure with a value shows its 95% interval and the method, or why there is none: never a bare 0
    (length,) = [line for line in out.splitlines() if line.startswith("| shapes_unread | length | none |")]
    ci, method = length.split(" | ")[5:7]
    assert (re.fullmatch(r"\[\d+\.\d{3}, \d+\.\d{3}\]", ci) and method == "clt, 2 docs") or (
        ci.startswith("none: every doc scores ") and method == "-"
    ), length
    assert (
        f"Note: the `-` figures of shapes_unread (1) have no value because none of the model's answers could "
        f"be parsed for them (the Unparsed column counts those answers); each sample's `responses` and "
        f"`filtered` answer are in samples_<task>.jsonl in {run_dir}."
    ) in out
    assert (
        f"Note: the `-` figures of shapes_unread (1) have no value because the task's scoring gave them for "
        f"no sample (a task leaves out a figure that does not apply to an answer); each sample's `metrics` in "
        f"samples_<task>.jsonl in {run_dir} show what it scored."
    ) in out
    assert "check process_results" not in out
    # re-scoring prints the same notes, naming the folder it scored
    assert main(["score", str(run_dir), "--include-path", str(unread_task)]) == 0
    assert f"samples_<task>.jsonl in {run_dir} show what it scored" in capsys.readouterr().out


def test_a_table_with_every_figure_present_has_no_note(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tasks"
    write(
        folder / "read.yaml",
        TASK.replace("shapes_unread", "shapes_read").replace(
            "  - metric: parsed\n    aggregation: mean\n  - metric: rare\n    aggregation: mean\n", ""
        ),
    )
    write(folder / "utils.py", UTILS)
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:qwen2_vl",
                "--tasks",
                "shapes_read",
                "--include-path",
                str(folder),
                "--data-dir",
                str(data_dir),
                "--limit",
                "2",
                "--output",
                str(tmp_path / "runs"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "| shapes_read | length | none |" in out and "| shapes_read | parsed" not in out
    assert "have no value" not in out and "smoke-test model" in out


def test_progress_bars_are_labelled_per_turn_and_absent_when_empty(
    unread_task: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_eval(unread_task, data_dir, tmp_path / "runs", "--refresh") == 0  # generated anew
    err = capsys.readouterr().err
    # each bar names its step and its work: prompts and answer length
    assert "generate: 2 prompts, up to 4 tokens each: 100%" in err
    assert "turn 2 of 2: 2 prompts, up to 4 tokens each: 100%" in err
    # a second run answers everything from the response store: no bar at all, no empty "0sample" one
    assert run_eval(unread_task, data_dir, tmp_path / "again") == 0
    err = capsys.readouterr().err
    assert "generate:" not in err and "turn 2 of 2:" not in err and "0sample" not in err
