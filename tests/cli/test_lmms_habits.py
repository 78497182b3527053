"""lmms-eval's habits: its option spellings, its fractional --limit, --tasks list, one name for the output
folder, help on every option, and the line that names the class reproducing lmms-eval."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from builders import all_builders
from builders.options import option_specs
from harness.cli import build_parser, main
from harness.cli.build import builder_parser
from harness.cli.lmms_spelling import harness_spelling
from harness.engine.limits import docs_to_run, parse_limit
from harness.engine.lmms_models import reproduce_hint
from harness.errors import HarnessError
from harness.taskspec.config import TaskConfig


def _parsers(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command's parser, each builder's own (``harness build NAME``) included."""
    yield path, parser
    for action in parser._actions:  # argparse keeps its subcommands nowhere else
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")
    if path == "harness build":
        for builder in all_builders():
            yield f"{path} {builder.name}", builder_parser(builder, option_specs(builder.load().Options), path)


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"{path}: {'/'.join(a.option_strings) or a.dest}"
        for path, parser in _parsers(build_parser(), "harness")
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction) and not a.help
    ]
    assert missing == []


def test_one_name_for_the_output_folder_and_no_underscores() -> None:
    """Every command that writes a folder calls the option --output (an older --out still reads), and no
    option is spelt with an underscore (lmms-eval's spellings are translated before parsing)."""
    outs = {}
    for path, parser in _parsers(build_parser(), "harness"):
        for a in parser._actions:
            assert not any("_" in s for s in a.option_strings), (path, a.option_strings)
            if {"--out", "--output"} & set(a.option_strings):
                outs[path] = a.option_strings[0]
    assert {"harness eval", "harness build shapes", "harness leaderboard export", "harness implant"} <= set(outs)
    assert set(outs.values()) == {"--output"}


def test_lmms_eval_spellings_are_read_as_the_harness_options() -> None:
    argv = ["eval", "--model", "hf:x", "--model_args", "dtype=float32", "--batch_size=4", "--output_path", "o"]
    assert harness_spelling([*argv, "--log_samples", "--include_path", "t", "--gen_kwargs", "a=1", "--", "--x_y"]) == [
        *("eval", "--model", "hf:x", "--model-args", "dtype=float32", "--batch-size=4", "--output", "o"),
        *("--include-path", "t", "--gen-kwargs", "a=1", "--", "--x_y"),
    ]
    args = build_parser().parse_args(harness_spelling([*argv, "--tasks", "shapes", "--limit", "0.5"]))
    assert (args.model_args, args.batch_size, args.output, args.limit) == ("dtype=float32", 4, "o", 0.5)


def test_lmms_eval_options_with_another_way_here_name_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes", "--device", "cuda:0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --device is lmms-eval's option; here write --model-args device=DEVICE"
    )
    assert main(["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes", "--num_fewshot", "2"]) == 2
    assert "num_fewshot is read from its YAML" in capsys.readouterr().err


def test_a_fractional_limit_is_that_share_of_each_tasks_docs_rounded_up() -> None:
    assert (parse_limit("8"), parse_limit("0.05"), parse_limit("1.0")) == (8, 0.05, 1)
    for bad in ("2.5", "0", "-1", "x", "nan"):
        with pytest.raises(HarnessError, match=r"^--limit must be a whole number of docs >= 1 or a fraction"):
            parse_limit(bad)
    # lmms-eval 0.7.3: int(math.ceil(len(docs) * limit)) when limit < 1, else int(limit)
    assert [docs_to_run(96, x) for x in (None, 0.05, 0.5, 8, 200)] == [96, 5, 48, 8, 96]


def test_a_fractional_limit_runs_and_is_recorded(tmp_path: Path, data_dir: Path) -> None:
    argv = ["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes_color", "--limit", "0.05", "--no-cache"]
    assert main([*argv, "--output_path", str(tmp_path), "--verbosity", "quiet"]) == 0
    (results,) = tmp_path.glob("*/*/results.json")
    run = json.loads(results.read_text())
    assert run["config"]["limit"] == 0.05 and run["n-samples"]["shapes_color"] == {"original": 96, "effective": 5}


def test_tasks_list_lists_the_tasks_without_a_model(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    assert main(["eval", "--tasks", "list"]) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("Tasks (datasets looked up in ") and "shapes_color" in listed
    assert main(["eval", "--tasks", "shapes"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: harness eval needs --model BACKEND:NAME (repeatable), e.g. --model tiny:qwen2_vl"
    )


def test_lmms_eval_own_tasks_without_lmms_model_name_the_class(tmp_path: Path) -> None:
    base = {"doc_to_text": "q", "metric_list": [{"metric": "exact_match"}]}
    theirs = TaskConfig.from_dict({**base, "task": "pope"}, tmp_path / "lmms_eval" / "tasks" / "pope" / "pope.yaml")
    ours = TaskConfig.from_dict({**base, "task": "shapes_color"}, tmp_path / "tasks" / "shapes" / "color.yaml")
    assert reproduce_hint([ours], "llava_hf", None) is None
    assert reproduce_hint([theirs, ours], "llava_hf", "llava_hf") is None
    assert reproduce_hint([theirs, ours], "llava_hf", None) == (
        "note: pope come from lmms-eval's own task folders; --lmms-model llava_hf reproduces lmms-eval's "
        "llava_hf class (its prompt blocks, answer length and stop handling), which this run does not"
    )
    assert reproduce_hint([theirs], "blip-2", None) == (
        "note: pope come from lmms-eval's own task folders; no --lmms-model class the harness reproduces "
        "matches this model (family blip-2; known: gemma3, idefics2, llava_hf, llava_onevision, qwen2_5_vl, "
        "qwen2_vl, qwen3_vl)"
    )
