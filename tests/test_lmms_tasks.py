"""lmms-eval's own tasks: every task YAML shipped with lmms-eval loads (or is refused with one line naming
why), and some of its task folders run unchanged through ``harness eval`` on local copies of their datasets.

The lmms-eval tests need lmms-eval's environment (``LMMS_EVAL_PYTHON``, as in test_lmms_compat.py): the
task files come from its installed package, and ``harness eval`` runs under that python so task code finds
the libraries it imports (MME's utils.py imports loguru).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.cli import main
from harness.taskspec.yaml_loader import load_yaml_config
from tests.conftest import ROOT, write

LMMS_PYTHON = os.environ.get("LMMS_EVAL_PYTHON")
needs_lmms = pytest.mark.skipif(not LMMS_PYTHON and not os.environ.get("CI"), reason="LMMS_EVAL_PYTHON is not set")
# Refused until the harness implements them (one line each; agentic for good: it needs lmms-eval's tool
# environment); anything else refused fails the corpus test.
KNOWN_REFUSALS = {"output_type generate_visual_cot", "output_type generate_until_agentic"}
# lmms-eval 0.7.3 itself cannot load this file (a `-` with no metric in metric_list: `"metric" in None`).
BROKEN_UPSTREAM = {"plm_videobench/rcap/rcap_test.yaml": "metric_list entry"}
# Reasons a parsed config does not resolve that lmms-eval 0.7.3 fails on too: a `!function` its file does not
# define (lmms-eval's YAML loader's getattr fails: the videomme/lvbench variant folders name their parent's
# functions), an aggregation name it never registered (its get_aggregation returns None; aime24_figures).
UNRUNNABLE_UPSTREAM = re.compile(r"is not defined$|^aggregation '\w+' is unknown$")

CORPUS_SCRIPT = """
import json, logging, sys
from pathlib import Path
logging.disable(logging.WARNING)
from harness.errors import TaskConfigError
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config
root, out = Path(sys.argv[1]), {"parsed": [], "refused": {}, "groups": 0, "fragments": 0, "unresolved": {}}
configs = {}
for path in sorted(root.rglob("*.yaml")):
    name = str(path.relative_to(root))
    try:
        raw = load_yaml_config(path)
        if isinstance(raw.get("task"), list):
            out["groups"] += 1
        elif not isinstance(raw.get("task"), str):
            out["fragments"] += 1  # included by other task files
        else:
            configs[name] = TaskConfig.from_dict(raw, path)
            out["parsed"].append(name)
    except TaskConfigError as exc:
        out["refused"][name] = str(exc)
heavy = {"torch", "numpy", "datasets", "transformers", "PIL", "pandas", "lmms_eval"}
out["imported"] = sorted({m.split(".")[0] for m in sys.modules} & heavy)
from harness.engine.task_check import unresolved  # reads task files, runs none of them
for name, config in configs.items():
    if (problem := unresolved(config)) is not None:
        out["unresolved"][name] = problem
print(json.dumps(out))
"""


def test_list_form_metadata_reaches_the_audit_hook(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    """lmms-eval writes ``metadata: [{version: 0.0}]``; the hook reads the typed config, not raw YAML."""
    folder = tmp_path / "listed"
    write(
        folder / "listed.yaml",
        """\
task: listed_meta
dataset_path: vlm-audit/shapes
test_split: test
doc_to_visual: !function utils.doc_to_visual
doc_to_text: "What color is the {{ kind }}?"
doc_to_target: color
process_results: !function utils.process_color
metric_list:
  - metric: exact_match
metadata:
  - version: 0.0
  - harness_audit: vista
""",
    )
    write(folder / "utils.py", (ROOT / "tasks" / "shapes" / "utils.py").read_text())
    argv = [
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        "listed_meta",
        "--include-path",
        str(folder),
        "--data-dir",
        str(data_dir),
        "--limit",
        "2",
        "--cache",
        str(tmp_path / "store.sqlite"),
        "--verbosity",
        "quiet",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "listed_meta: one model evaluated; run `harness audit vista`" in captured.out


def installed_lmms_tasks() -> Path:
    """The ``tasks`` folder of the installed lmms-eval, found without importing lmms-eval."""
    assert LMMS_PYTHON, "CI must provide lmms-eval (LMMS_EVAL_PYTHON) for the lmms-eval task tests"
    done = subprocess.run(
        [
            LMMS_PYTHON,
            "-c",
            "import importlib.util; print(importlib.util.find_spec('lmms_eval').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return Path(done.stdout.strip()) / "tasks"


@pytest.fixture(scope="module")
def lmms_tasks_dir() -> Path:
    """The installed lmms-eval's ``tasks`` folder (:func:`installed_lmms_tasks`)."""
    return installed_lmms_tasks()


def _reason(message: str) -> str:
    """The refusal category of a one-line TaskConfigError message."""
    if match := re.search(r"output_type '(\w+)' is not supported", message):
        return f"output_type {match.group(1)}"
    return message.split(": ", 1)[-1]


@pytest.mark.lmms
@needs_lmms
def test_every_lmms_eval_task_yaml_loads_or_is_refused_in_one_line(lmms_tasks_dir: Path) -> None:
    """Two figures: configs that parse, and configs whose filters, metrics and aggregations all resolve (read
    from the task files without running them), each at least 98% of lmms-eval's task configs."""
    done = subprocess.run(
        [sys.executable, "-c", CORPUS_SCRIPT, str(lmms_tasks_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    by_reason = Counter(_reason(m) for m in out["refused"].values())
    total = len(out["parsed"]) + len(out["refused"])
    print(
        f"\nlmms-eval task configs: {len(out['parsed'])} of {total} parsed ({len(out['parsed']) / total:.1%}), "
        f"{len(out['refused'])} refused ({dict(by_reason.most_common())}); {out['groups']} groups, "
        f"{out['fragments']} include fragments"
    )
    resolved = len(out["parsed"]) - len(out["unresolved"])
    upstream = sum(bool(UNRUNNABLE_UPSTREAM.search(m)) for m in out["unresolved"].values()) + len(BROKEN_UPSTREAM)
    runnable = total - upstream  # the configs lmms-eval itself can run
    print(
        f"lmms-eval task configs whose filters, metrics and aggregations all resolve: {resolved} of the {runnable} "
        f"lmms-eval itself can run ({resolved / runnable:.1%}; {resolved / total:.1%} of all {total}); not: "
        f"{dict(Counter(out['unresolved'].values()).most_common())}"
    )
    assert all("\n" not in m for m in out["refused"].values())
    unexpected = {
        name: m
        for name, m in out["refused"].items()
        if _reason(m) not in KNOWN_REFUSALS and BROKEN_UPSTREAM.get(name, "\0") not in m
    }
    assert not unexpected, unexpected
    assert len(out["parsed"]) >= 0.98 * total
    assert all(UNRUNNABLE_UPSTREAM.search(m) for m in out["unresolved"].values()), out["unresolved"]
    assert resolved >= 0.98 * runnable
    assert {"mme/mme.yaml", "pope/pope.yaml", "arc/arc_easy.yaml", "gsm8k/gsm8k.yaml"} <= set(out["parsed"])
    assert out["imported"] == [], "loading task configs must not import task code or heavy libraries"


def _images(n: int) -> list:
    from PIL import Image

    return [Image.new("RGB", (32, 32), color) for color in ["red", "green", "blue", "yellow"][:n]]


def _mme(images: list) -> dict[str, list]:
    """Two pairs (MME scores each image's yes and no question together): one perception, one cognition."""
    return {
        "question_id": ["existence/1.png"] * 2 + ["commonsense_reasoning/2.png"] * 2,
        "image": [images[0], images[0], images[1], images[1]],
        "question": ["Is there a square? Please answer yes or no."] * 4,
        "answer": ["Yes", "No", "Yes", "No"],
        "category": ["existence"] * 2 + ["commonsense_reasoning"] * 2,
    }


def _pope(images: list) -> dict[str, list]:
    return {
        "id": ["0", "1", "2", "3"],
        "question_id": ["1", "2", "3", "4"],
        "question": ["Is there a dog in the image?"] * 4,
        "answer": ["yes", "no", "yes", "no"],
        "image_source": ["a", "b", "c", "d"],
        "image": images,
        "category": ["adversarial"] * 4,
    }


def _scienceqa(images: list) -> dict[str, list]:
    n = len(images)
    return {
        "image": images,
        "question": ["Which color is shown?"] * n,
        "choices": [["red", "green", "blue"]] * n,
        "answer": [0, 1, 2, 0][:n],
        "hint": ["", "Look.", "", ""][:n],
        "task": ["closed choice"] * n,
        "grade": ["grade2"] * n,
        "subject": ["natural science"] * n,
        "topic": ["colors"] * n,
        "category": ["Colors"] * n,
        "skill": ["Identify colors"] * n,
        "lecture": [""] * n,
        "solution": [""] * n,
    }


def _write_copy(data_dir: Path, yaml_file: Path, columns: dict[str, list]) -> None:
    """A local copy in the Hub's layout: ``DIR/org/name/[config/]test-00000-of-00001.parquet``, with the
    README ``configs`` block the Hub uses when the task names a ``dataset_name``."""
    import datasets

    config = load_yaml_config(yaml_file)
    folder = data_dir / config["dataset_path"]
    name = config.get("dataset_name")
    features = datasets.Dataset.from_dict({k: v for k, v in columns.items() if k != "image"}).features
    features["image"] = datasets.Image()
    parquet = folder / (name or "data") / "test-00000-of-00001.parquet"
    parquet.parent.mkdir(parents=True)
    datasets.Dataset.from_dict(columns, features=features).to_parquet(str(parquet))
    if name:
        write(
            folder / "README.md",
            f"---\nconfigs:\n- config_name: {name}\n  data_files:\n  - split: test\n    path: {name}/test-*\n---\n",
        )


@pytest.mark.lmms
@needs_lmms
def test_lmms_eval_task_folders_run_unchanged(tmp_path: Path, lmms_tasks_dir: Path) -> None:
    """MME, POPE and ScienceQA-IMG (multiple choice as generate_until), straight from lmms-eval's package."""
    images = _images(4)
    tasks = {
        "mme": ("mme/mme.yaml", _mme(images), {"mme_perception_score", "mme_cognition_score"}),
        "pope": (
            "pope/pope.yaml",
            _pope(images),
            {"pope_accuracy", "pope_precision", "pope_recall", "pope_f1_score", "pope_yes_ratio"},
        ),
        "scienceqa_img": ("scienceqa/scienceqa_img.yaml", _scienceqa(images), {"exact_match"}),
    }
    data = tmp_path / "data"
    argv = [
        "eval",
        "--model",
        "tiny:qwen2_vl",
        "--tasks",
        ",".join(tasks),
        "--data-dir",
        str(data),
        "--output",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "store.sqlite"),
        "--verbosity",
        "quiet",
    ]
    for yaml_name, columns, _ in tasks.values():
        _write_copy(data, lmms_tasks_dir / yaml_name, columns)
        argv += ["--include-path", str((lmms_tasks_dir / yaml_name).parent)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [LMMS_PYTHON or "", "-m", "harness.cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    print(done.stdout)  # the summary table, shown with -s
    (results_file,) = (tmp_path / "out").rglob("results.json")
    written = json.loads(results_file.read_text())
    for task, (_, columns, metrics) in tasks.items():
        values = written["results"][task]
        assert {f"{m},none" for m in metrics} <= set(values), (task, values)
        assert all(isinstance(values[f"{m},none"], (int, float)) for m in metrics), (task, values)
        assert written["counts"][task]["errors"] == 0 and written["counts"][task]["samples"] == len(columns["image"])
