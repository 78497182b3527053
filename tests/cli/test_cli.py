"""The command line as a user meets it: one-line errors, exit codes, and resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError
from tests.conftest import ROOT, write


def harness(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=300, **kw
    )


def one_line_error(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    last = err.splitlines()[-1]  # in-process, library progress bars may precede it
    assert last.startswith("error: ")
    return last


def test_clear_errors(capsys: pytest.CaptureFixture, tmp_path: Path, data_dir: Path) -> None:
    assert "must look like BACKEND:NAME" in one_line_error(capsys, ["eval", "--model", "qwen", "--tasks", "shapes"])
    assert "did you mean shapes_color" in one_line_error(
        capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes_colr"]
    )
    write(tmp_path / "bad" / "bad.yaml", "task: bad_yaml\nmetric_list: [\n")
    err = one_line_error(
        capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "bad_yaml", "--include-path", str(tmp_path / "bad")]
    )
    assert "bad.yaml:3: malformed YAML" in err
    write(
        tmp_path / "nofn" / "t.yaml",
        "task: nofn\ndataset_path: vlm-audit/shapes\ndoc_to_text: q\n"
        "process_results: !function utils.missing\nmetric_list:\n  - metric: exact_match\n",
    )
    write(tmp_path / "nofn" / "utils.py", "x = 1\n")
    err = one_line_error(
        capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "nofn", "--include-path", str(tmp_path / "nofn")]
    )
    assert "!function utils.missing" in err and "has no 'missing'" in err
    write(
        tmp_path / "nodata" / "t.yaml",
        "task: nodata\ndataset_path: someorg/not-here\ndoc_to_text: q\nmetric_list:\n  - metric: exact_match\n",
    )
    err = one_line_error(
        capsys,
        [
            "eval",
            "--model",
            "tiny:qwen2_vl",
            "--tasks",
            "nodata",
            "--data-dir",
            str(tmp_path / "d"),
            "--include-path",
            str(tmp_path / "nodata"),
        ],
    )
    assert "'someorg/not-here' is not available" in err and "--data-dir" in err
    write(
        tmp_path / "badgen" / "t.yaml",
        "task: badgen\ndataset_path: vlm-audit/shapes\ndoc_to_text: q\n"
        "metric_list:\n  - metric: exact_match\ngeneration_kwargs:\n  image_aspect_ratio: pad\n",
    )
    err = one_line_error(
        capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "badgen", "--include-path", str(tmp_path / "badgen")]
    )
    assert "unsupported generation setting(s) image_aspect_ratio" in err
    assert "no results.json" in one_line_error(capsys, ["score", str(tmp_path)])
    assert "--repeats must be at least 1" in one_line_error(
        capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "shapes", "--repeats", "0"]
    )


def test_unknown_audit_tag_is_refused_by_eval_and_flagged_by_tasks(
    capsys: pytest.CaptureFixture, tmp_path: Path, data_dir: Path
) -> None:
    """Which audit tags exist is checked where tasks are validated (reading a config loads no protocol)."""
    write(
        tmp_path / "tag" / "t.yaml",
        "task: badtag\ndataset_path: vlm-audit/shapes\ndoc_to_text: q\ndoc_to_target: color\n"
        "metric_list:\n  - metric: exact_match\nmetadata:\n  harness_audit: vistaa\n",
    )
    folder = str(tmp_path / "tag")
    err = one_line_error(capsys, ["eval", "--model", "tiny:qwen2_vl", "--tasks", "badtag", "--include-path", folder])
    assert "t.yaml: metadata harness_audit 'vistaa' is unknown (known: " in err and "vista" in err
    assert main(["tasks", "--include-path", folder, "--data-dir", str(tmp_path / "d")]) == 0
    out, err = capsys.readouterr()
    assert "harness_audit 'vistaa' is unknown" in err and "badtag" not in out


def test_tasks_lists_tasks_groups_and_tags(capsys: pytest.CaptureFixture, data_dir: Path, tmp_path: Path) -> None:
    # A data dir of its own holding only shapes: other tests of the session build more sets into the default one.
    (tmp_path / "vlm-audit").mkdir()
    (tmp_path / "vlm-audit" / "shapes").symlink_to(data_dir / "vlm-audit" / "shapes")
    assert main(["tasks", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "shapes_color" in out and "shapes: shapes_color, shapes_kind" in out and "shapes_demo:" in out
    lines = out.splitlines()
    color = lines.index(next(line for line in lines if line.strip().startswith("shapes_color ")))
    assert "name the shape's color" in lines[color]
    assert f"dataset vlm-audit/shapes: local ({tmp_path / 'vlm-audit/shapes'})" in lines[color + 1]
    vista = lines.index(next(line for line in lines if line.strip().startswith("vista ")))
    assert "dataset vlm-audit/vista: not local (build: harness build vista)" in lines[vista + 1]
    assert "no description" not in out  # every bundled task's YAML starts with its description comment


def test_tasks_checks_the_split_a_task_reads(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    """A Stealth build without its vqa split: stealth_short is local, stealth_vqa is not."""
    from datasets import Dataset

    folder = tmp_path / "vlm-audit" / "stealth"
    (folder / "data").mkdir(parents=True)
    Dataset.from_dict({"text": ["a"]}).to_parquet(str(folder / "data" / "short-00000-of-00001.parquet"))
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: short\n    path: data/short-*\n---\n"
    )
    assert main(["tasks", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    state = {
        lines[k].split()[0]: lines[k + 1].strip() for k in range(len(lines) - 1) if lines[k].startswith("  stealth_")
    }
    assert state["stealth_short"] == f"dataset vlm-audit/stealth: local ({folder})"
    assert state["stealth_vqa"] == (
        f"dataset vlm-audit/stealth: split 'vqa' not built (the local "
        f"copy {folder} has short; build: harness build stealth [--squad FILE])"
    )


def test_build_help_lists_every_builder_with_its_extra() -> None:
    from builders import all_builders

    done = harness("build", "--help")
    assert done.returncode == 0
    for builder in all_builders():
        (line,) = [x for x in done.stdout.splitlines() if x.strip().startswith(builder.name + " ")]
        assert builder.description in line and (f"[extra: {builder.extra}]" in line) == bool(builder.extra)


def test_run_that_fails_entirely_exits_non_zero(tmp_path: Path, data_dir: Path) -> None:
    done = harness(
        "eval", "--model", "tiny:qwen3", "--tasks", "shapes_color", "--limit", "2", "--no-cache", "--verbosity", "quiet"
    )
    assert done.returncode == 1 and "every sample failed" in done.stderr


def _rows(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def _responses(out: Path) -> dict[int, list[str]]:
    (samples,) = out.rglob("samples_shapes_color.jsonl")
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    return {r["doc_id"]: r["responses"] for r in records}


def test_kill_9_halfway_then_resume_matches_an_uninterrupted_run(tmp_path: Path, data_dir: Path) -> None:
    args = [
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        "shapes_color",
        "--limit",
        "48",
        "--gen-kwargs",
        "temperature=0.8,max_new_tokens=24",
    ]
    store = tmp_path / "store.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args, "--cache", str(store), "--output", str(tmp_path / "a")],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 240
    while _rows(store) < 10 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = _rows(store)
    assert 10 <= saved < 48, "the run should have been killed halfway"
    assert not (tmp_path / "a").exists() or not list((tmp_path / "a").rglob("results.json"))

    resumed = harness(*args, "--cache", str(store), "--output", str(tmp_path / "a"), "--verbosity", "quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{48 - saved} request(s) generated, {saved} from the response store" in resumed.stdout
    fresh = harness(*args, "--no-cache", "--output", str(tmp_path / "b"), "--verbosity", "quiet")
    assert fresh.returncode == 0, fresh.stderr
    resumed_samples, fresh_samples = _responses(tmp_path / "a"), _responses(tmp_path / "b")
    assert sorted(resumed_samples) == list(range(48))
    assert resumed_samples == fresh_samples
    assert _rows(store) == 48


@pytest.mark.parametrize(
    ("arch", "purpose"),
    [
        ("owlv2", "detector for diavlo"),
        ("sdxl_turbo", "generator for vista"),
        ("instruct_pix2pix", "editor for fusion"),
    ],
)
def test_non_chat_tiny_models_are_refused_as_models(
    capsys: pytest.CaptureFixture, arch: str, purpose: str, data_dir: Path
) -> None:
    from harness.models.base import create_backend
    from harness.protocols.base import protocols

    protocols()  # the protocols register their non-chat tiny models, as the CLI's parser does
    with pytest.raises(HarnessError, match=purpose):
        create_backend(f"tiny:{arch}")
    err = one_line_error(capsys, ["eval", "--model", f"tiny:{arch}", "--tasks", "shapes_color", "--limit", "1"])
    assert f"tiny:{arch} is not a chat model" in err
