"""Honest runs always verify, tampered ones never: one run for each way a run's generation settings arise
(the task sets them all; it sets none, for each model family's default; ``--lmms-model`` for each class it
accepts; ``--gen-kwargs``; ``--repeats`` with sampling; few-shot; multi-round; ``multiple_choice``; a group;
tasks from ``--include-path``), each made by ``harness eval`` and checked by ``harness score --verify`` and
by the leaderboard's verification; then an edited prompt, image, setting, seed or answer, and an override
written into ``results.json`` after the fact, each refused.

Runs whose answers matter (sampling, ``multiple_choice``, the issue's own example) use tiny random-weight
models. The family sweeps use ``family:NAME``, a backend plug-in (the documented seam) of lmms-eval family
NAME that answers at once, so a family whose default answer is 1024 or 32768 tokens long is checked without
generating them: the settings, not the answers, are what these runs test."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.engine.lmms_models import LMMS_MODELS
from harness.engine.requests import prompt_key
from harness.engine.settings import RunFlags
from harness.hashing import derive_seed
from harness.leaderboard.bundle import parse_bundle, read_run_files
from harness.leaderboard.checks import MISMATCH, MODIFIED
from harness.leaderboard.db import Database
from harness.leaderboard.pages import render_index, render_model
from harness.leaderboard.protocol_parts import board_parts
from harness.leaderboard.records import list_submissions
from harness.leaderboard.rescoring import verify
from harness.leaderboard.service import Settings, submit_files
from harness.leaderboard.tables import protocol_tables, table_csv, table_json
from harness.models import base
from harness.models.base import Backend, GenerationParams, GenerationRequest
from harness.models.family import LMMS_FAMILY
from harness.taskspec.registry import TaskRegistry
from tests.conftest import write
from tests.engine.test_loglikelihood import SHAPES_MC
from tests.engine.test_multi_round import TASK as ROUNDS_TASK
from tests.engine.test_multi_round import UTILS as ROUNDS_UTILS

ROOT = Path(__file__).resolve().parents[1]

#: The issue's example: a task of one's own that sets no generation setting at all.
NOLEN = """\
task: nolen_color
dataset_path: vlm-audit/shapes
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_target: color
lmms_eval_specific_kwargs:
  default:
    question: "What color is the shape?"
    post_prompt: "\\nAnswer with one word."
process_results: !function utils.process_color
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1
"""
#: A one-shot task: each prompt starts with the first other doc and its answer.
FEWSHOT = NOLEN.replace("task: nolen_color", "task: fewshot_color").replace(
    "metric_list:",
    "num_fewshot: 1\nfewshot_config:\n  sampler: first_n\ngeneration_kwargs:\n  max_new_tokens: 8\nmetric_list:",
)


class FamilyBackend(Backend):
    """A model of lmms-eval family ``NAME`` (``none``: a family lmms-eval has no class for) answering every
    prompt with ``red`` at once."""

    def __init__(self, family: str) -> None:
        self.model_family = None if family == "none" else family

    @classmethod
    def from_spec(cls, name: str, model_args: dict[str, str]) -> FamilyBackend:
        return cls(name)

    @property
    def fingerprint(self) -> str:
        return f"family:{self.model_family}"

    def info(self) -> dict[str, Any]:
        return {"backend": "family", "model": self.fingerprint, "model_family": self.model_family}

    def generate(self, requests: list[GenerationRequest]) -> list[list[str] | Exception]:
        return [["red"] * r.n for r in requests]


@pytest.fixture(scope="module", autouse=True)
def family_backend() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "_REGISTRY", {**base._REGISTRY, "family": FamilyBackend.from_spec})
        yield


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The include-path folder: the issue's ``nolen_color``, a few-shot task, a multi-round task and a
    ``multiple_choice`` task, all over the shapes dataset."""
    folder = tmp_path_factory.mktemp("t")
    utils = (ROOT / "tasks" / "shapes" / "utils.py").read_text()
    write(folder / "nolen" / "nolen_color.yaml", NOLEN)
    write(folder / "nolen" / "utils.py", utils)
    write(folder / "more" / "fewshot_color.yaml", FEWSHOT)
    write(folder / "more" / "shapes_color_mc.yaml", SHAPES_MC)
    write(folder / "more" / "utils.py", utils + ROUNDS_UTILS)
    write(folder / "more" / "rounds.yaml", ROUNDS_TASK.format(name="rounds", doc_to_text="doc_to_text"))
    return folder


def _eval(model: str, task_names: str, out: Path, data_dir: Path, includes: list[Path], *flags: str) -> Path:
    """One ``harness eval`` run of two docs; its run folder."""
    include = [a for p in includes for a in ("--include-path", str(p))]
    argv = ["eval", "--model", model, "--tasks", task_names, "--limit", "2", "--data-dir", str(data_dir)]
    assert main([*argv, *include, "--output", str(out), "--no-cache", "--verbosity", "quiet", *flags]) == 0
    (results,) = out.rglob("results.json")
    return results.parent


def _score_verify(run: Path, data_dir: Path | None, includes: list[Path], out: Path | None = None) -> int:
    """``harness score RUN --verify`` (with the dataset when ``data_dir`` is given): its exit status."""
    argv = ["score", str(run), "--verify", *(a for p in includes for a in ("--include-path", str(p)))]
    argv += ["--data-dir", str(data_dir)] if data_dir else []
    argv += ["--output", str(out)] if out else []
    return main(argv)


def _verifies(run: Path, data_dir: Path, includes: list[Path], tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run verifies clean with ``harness score --verify`` (dataset images checked) and on the
    leaderboard (never ``modified``, no claim differs; a run cut by --limit is ``partial`` there)."""
    capsys.readouterr()
    code = _score_verify(run, data_dir, includes, tmp / "rescored")
    out = capsys.readouterr().out
    assert code == 0, out
    tasks = json.loads((run / "results.json").read_text())["configs"]
    for task in tasks:
        assert f"{task}: requests as the task builds them" in out
    assert "differ" not in out
    checked = verify(parse_bundle(read_run_files(run)), TaskRegistry.discover(includes), data_dir)
    for task in tasks:
        assert checked.checks[task].status not in (MODIFIED, MISMATCH), checked.checks[task]


SAMPLING = "temperature=1.0,top_p=0.9,max_new_tokens=4"
FAMILIES = sorted({*LMMS_FAMILY.values(), *LMMS_MODELS, "none"})


@pytest.mark.parametrize("family", FAMILIES)
def test_a_task_that_sets_no_settings_verifies_for_each_family_default(
    family: str, tasks: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _eval(f"family:{family}", "nolen_color", tmp_path / "runs", data_dir, [tasks / "nolen"])
    recorded = json.loads((run / "results.json").read_text())["provenance"]["generation"]["nolen_color"]
    assert recorded["max_new_tokens"] == (LMMS_MODELS[family].max_new_tokens if family in LMMS_MODELS else 256)
    _verifies(run, data_dir, [tasks / "nolen"], tmp_path, capsys)


@pytest.mark.parametrize("lmms_model", sorted(LMMS_MODELS))
def test_every_lmms_model_class_verifies(
    lmms_model: str, tasks: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The class's prompt blocks, answer length and stop handling, on a task that sets none and on one
    that sets its own (``shapes_color``: 16 tokens, stop at a newline)."""
    run = _eval(
        "family:qwen2_vl", "nolen_color,shapes_color", tmp_path / "runs", data_dir, [tasks / "nolen"],
        "--lmms-model", lmms_model,
    )  # fmt: skip
    _verifies(run, data_dir, [tasks / "nolen"], tmp_path, capsys)


@pytest.mark.parametrize(
    ("model", "task_names", "folder", "flags"),
    [
        ("family:qwen2_vl", "shapes_color", None, ()),  # the task sets every setting
        ("family:gemma3", "shapes", None, ()),  # a group
        ("family:qwen2_vl", "shapes_color", None, ("--gen-kwargs", "max_new_tokens=3,until=[\".\"]")),
        ("family:qwen2_vl", "fewshot_color", "more", ()),
        ("family:llava_hf", "rounds", "more", ()),
        ("tiny:qwen2_vl", "shapes_color", None, ("--repeats", "2", "--seed", "3", "--gen-kwargs", SAMPLING)),
        ("tiny:qwen2_vl", "shapes_color_mc", "more", ()),
    ],
    ids=["task-sets-all", "group", "gen-kwargs", "few-shot", "multi-round", "repeats-sampled", "multiple-choice"],
)  # fmt: skip
def test_each_way_settings_arise_verifies(
    model: str,
    task_names: str,
    folder: str | None,
    flags: tuple[str, ...],
    tasks: Path,
    data_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    includes = [tasks / folder] if folder else []
    run = _eval(model, task_names, tmp_path / "runs", data_dir, includes, *flags)
    _verifies(run, data_dir, includes, tmp_path, capsys)


def test_the_issue_example_verifies(
    tasks: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``harness eval --model tiny:qwen2_vl --tasks nolen_color --include-path t/nolen``, then ``harness score
    RUN --include-path t/nolen --verify``: 128 tokens (lmms-eval's qwen2_vl default) in the requests and in
    provenance, and verified."""
    argv = ["eval", "--model", "tiny:qwen2_vl", "--tasks", "nolen_color", "--include-path", str(tasks / "nolen")]
    argv += ["--limit", "1", "--data-dir", str(data_dir), "--output", str(tmp_path / "runs"), "--no-cache"]
    assert main([*argv, "--verbosity", "quiet"]) == 0
    (results,) = (tmp_path / "runs").rglob("results.json")
    assert json.loads(results.read_text())["provenance"]["generation"]["nolen_color"]["max_new_tokens"] == 128
    capsys.readouterr()
    assert main(["score", str(results.parent), "--include-path", str(tasks / "nolen"), "--verify"]) == 0
    assert "nolen_color: requests as the task builds them (1 samples, images not checked)" in capsys.readouterr().out


# ---- tampered runs -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sampled_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An honest sampled run (two answers per prompt, base seed 3) of shapes_color on tiny:qwen2_vl."""
    flags = ("--repeats", "2", "--seed", "3", "--gen-kwargs", "temperature=1.0,max_new_tokens=4")
    return _eval("tiny:qwen2_vl", "shapes_color", tmp_path_factory.mktemp("honest"), data_dir, [], *flags)


def _rows(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "samples_shapes_color.jsonl").read_text().splitlines()]


def _write_rows(run: Path, rows: list[dict[str, Any]]) -> None:
    (run / "samples_shapes_color.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _edit_results(run: Path, edit: Any) -> None:
    results = json.loads((run / "results.json").read_text())
    edit(results)
    (run / "results.json").write_text(json.dumps(results))


def _rekey(rows: list[dict[str, Any]], params: GenerationParams, n: int, seed: int) -> None:
    """Keys and seeds made consistent with each row's prompt, as an edited copy of the task would make them."""
    for row in rows:
        row["request_key"] = prompt_key(row["prompt"], params, n)
        row["seed"] = derive_seed(seed, row["request_key"])


SAMPLED = GenerationParams(max_new_tokens=4, temperature=1.0, until=("\n",))  # the task stops at a newline


def _prompt_text(run: Path) -> None:
    rows = _rows(run)
    rows[0]["prompt"][0]["content"][-1]["text"] += " Answer in one word."
    _rekey(rows, SAMPLED, 2, 3)
    _write_rows(run, rows)


def _image(run: Path) -> None:
    rows = _rows(run)
    for item in rows[1]["prompt"][0]["content"]:
        if item.get("type") == "image":
            item["url"] = "sha256:" + "0" * 64
    _rekey(rows, SAMPLED, 2, 3)
    _write_rows(run, rows)


def _setting(run: Path) -> None:
    shorter = GenerationParams(max_new_tokens=3, temperature=1.0, until=("\n",))
    rows = _rows(run)
    _rekey(rows, shorter, 2, 3)
    _write_rows(run, rows)
    _edit_results(run, lambda r: r["provenance"]["generation"]["shapes_color"].update(max_new_tokens=3))


def _sample_seed(run: Path) -> None:
    rows = _rows(run)
    rows[0]["seed"] += 1
    _write_rows(run, rows)


def _declared_seed(run: Path) -> None:
    _edit_results(run, lambda r: r["config"].update(seed=4))


def _answer(run: Path) -> None:
    """The first sample's answers replaced by its target, so it now scores as right; its claims kept."""
    rows = _rows(run)
    rows[0]["responses"] = [rows[0]["target"]] * 2
    _write_rows(run, rows)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_prompt_text, "prompt[0].content[1].text"),
        (_image, "prompt[0].content[0].url"),
        (_setting, "provenance generation.max_new_tokens: submitted 3, expected 4"),
        (_sample_seed, "seed: submitted"),
        (_declared_seed, "seed: submitted"),
        (_answer, "claims differ from the re-scored answers (first: doc 0: metrics."),
    ],
    ids=["prompt", "image", "setting", "sample-seed", "declared-seed", "answer"],
)
def test_an_edited_run_never_verifies(
    edit: Any, says: str, sampled_run: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(sampled_run, run)
    edit(run)
    capsys.readouterr()
    code = _score_verify(run, data_dir, [], tmp_path / "rescored")
    out = capsys.readouterr().out
    assert code == 1 and says in out, out
    status = verify(parse_bundle(read_run_files(run)), TaskRegistry.discover(), data_dir).checks["shapes_color"]
    assert status.status in (MODIFIED, MISMATCH), status


def test_an_override_written_in_after_the_fact_leaves_a_modified_run_modified(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run of a copy of shapes_color asking 3 tokens is ``modified``; writing ``--gen-kwargs
    max_new_tokens=3`` into its config afterwards does not make it verified: the copy of the task it
    records still sets 3. An honest ``--gen-kwargs max_new_tokens=3`` run verifies, its override shown."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "tasks" / "shapes", copy)
    template = (copy / "_default_template_yaml").read_text()
    (copy / "_default_template_yaml").write_text(template.replace("max_new_tokens: 16", "max_new_tokens: 3"))
    short = _eval("family:qwen2_vl", "shapes_color", tmp_path / "short", data_dir, [copy])
    honest = _eval(
        "family:qwen2_vl", "shapes_color", tmp_path / "honest", data_dir, [], "--gen-kwargs", "max_new_tokens=3"
    )
    registry = TaskRegistry.discover()

    def checked(run: Path) -> Any:
        return verify(parse_bundle(read_run_files(run)), registry, data_dir).checks["shapes_color"]

    assert checked(short).status == MODIFIED
    _edit_results(short, lambda r: r["config"].update(gen_overrides={"max_new_tokens": 3}))
    after = checked(short)
    assert after.status == MODIFIED
    assert "configs.shapes_color.generation_kwargs.max_new_tokens: submitted 3, expected 16" in after.message
    capsys.readouterr()
    assert _score_verify(short, data_dir, []) == 1
    assert "the run's copy of the task sets other generation settings" in capsys.readouterr().out

    assert checked(honest).status not in (MODIFIED, MISMATCH)
    assert _score_verify(honest, data_dir, [], tmp_path / "rescored") == 0
    assert "Settings: run with --gen-kwargs max_new_tokens=3, not its tasks' own" in capsys.readouterr().out


def test_the_declared_flags_read_as_typed() -> None:
    assert RunFlags().describe() == ""
    flags = RunFlags({"temperature": 1.0, "until": ["\n"], "max_new_tokens": 5}, "llava_hf", 3, 7)
    assert (
        flags.describe()
        == '--gen-kwargs temperature=1.0,until=["\\n"],max_new_tokens=5 --lmms-model llava_hf --repeats 3'
    )


def test_an_override_is_shown_beside_the_figures_on_every_table_and_page(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of shapes_color, one with the task's settings and one with ``--gen-kwargs max_new_tokens=3
    --repeats 2``: the second's row carries its flags in the index page, the CSV, the JSON and its model
    page, and the printed results table says so; the first's carries none."""
    plain = _eval("family:qwen2_vl", "shapes_color", tmp_path / "plain", data_dir, [])
    flags = ("--gen-kwargs", "max_new_tokens=3", "--repeats", "2")
    other = _eval("family:qwen2_vl", "shapes_color", tmp_path / "other", data_dir, [], *flags)
    typed = "--gen-kwargs max_new_tokens=3 --repeats 2"
    db = Database(f"sqlite:///{tmp_path / 'board.sqlite'}")
    settings = Settings(data_dir=data_dir)
    try:
        ids = [submit_files(db, read_run_files(run), "alice", settings).id for run in (plain, other)]
        records = list_submissions(db)
        parts = board_parts(db, settings)
    finally:
        db.close()
    (table,) = protocol_tables(records)
    rows = {row.id: row for row in table.rows}
    assert (rows[ids[0]].settings, rows[ids[1]].settings) == ("", typed)
    exported = {int(r["id"]): r["settings"] for r in csv.DictReader(io.StringIO(table_csv(table)))}
    assert exported == {ids[0]: "", ids[1]: "'" + typed}  # a leading "-" is kept from being a formula
    assert {r["id"]: r["settings"] for r in table_json(table)["rows"]} == {ids[0]: "", ids[1]: typed}
    index = render_index(records, parts)
    assert index.count('class="badge settings"') == 1 and f">{typed}</span>" in index
    pages = {r.id: render_model(r, [], parts) for r in records}
    assert f"run with <code>{typed}</code>" in pages[ids[1]] and "badge settings" not in pages[ids[0]]
    capsys.readouterr()
    assert main(["score", str(other), "--output", str(tmp_path / "rescored")]) == 0
    assert f"Settings: run with {typed}, not its tasks' own generation settings." in capsys.readouterr().out
