"""lmms-eval's own image tasks, unchanged (YAML and utils.py from its installed package), run in lmms-eval and
in the harness (``--lmms-model llava_hf``) with the same tiny LLaVA on small local datasets in each task's real
columns: equal prompts, equal answers (per-choice losses to 1e-4), equal per-sample and final metrics.

Seven kinds: POPE (yes/no, aggregation functions), AI2D (multiple choice through a ``!function`` filter
class), TextVQA (open VQA with its own answer normalisation), DocVQA val (the built-in ``anls`` with no
``process_results``), ChartQA (relaxed accuracy), OCRBench (an aggregation taking ``args``, with
module-level state) and SEED-Bench PPL (``multiple_choice``). One lmms-eval process runs all of them (through
test_loglikelihood_lmms's driver, which fixes only lmms-eval 0.7.3's ``multiple_choice`` path), and one
harness process; both under LMMS_EVAL_PYTHON, since the tasks' code imports lmms_eval. Beside the figures, each
task's lmms-eval statistics (``_stderr_clt``, ``_stderr_clustered``) agree, and harness.metrics.uncertainty gives
what lmms-eval's own functions give on the same values.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.metrics import uncertainty
from harness.results.metric_key import figures
from harness.taskspec.yaml_loader import load_yaml_config
from harness.tiny_models import tiny_model_path
from tests.conftest import ROOT, write
from tests.test_lmms_tasks import installed_lmms_tasks
from tests.test_loglikelihood_lmms import LMMS_DRIVER

LMMS_PYTHON = os.environ.get("LMMS_EVAL_PYTHON")
pytestmark = [
    pytest.mark.lmms,
    pytest.mark.skipif(not LMMS_PYTHON and not os.environ.get("CI"), reason="LMMS_EVAL_PYTHON is not set"),
]
N = 3


def _images(n: int, kind: str) -> list:
    from PIL import Image

    colors = ["red", "green", "blue", "yellow"]
    return [Image.new("RGB", (28 + 6 * i, 24 + 4 * i), colors[(i + len(kind)) % 4]) for i in range(n)]


def _columns() -> dict[str, tuple[str, str, dict[str, list]]]:
    """task -> (its YAML in lmms-eval's package, split, columns)."""
    return {
        "pope": (
            "pope/pope.yaml",
            "test",
            {
                "id": ["0", "1", "2"],
                "question_id": ["1", "2", "3"],
                "question": ["Is there a dog in the image?"] * 3,
                "answer": ["yes", "no", "yes"],
                "image_source": ["a", "b", "c"],
                "image": _images(N, "pope"),
                "category": ["adversarial"] * 3,
            },
        ),
        "ai2d": (
            "ai2d/ai2d.yaml",
            "test",
            {
                "question": ["Which part is red?", "What eats grass?", "Which is the sun?"],
                "options": [["leaf", "stem", "root"], ["cow", "lion", "hawk", "snake"], ["A", "B"]],
                "answer": ["0", "1", "1"],
                "image": _images(N, "ai2d"),
            },
        ),
        "textvqa_val": (
            "textvqa/textvqa_val.yaml",
            "validation",
            {
                "question_id": [1, 2, 3],
                "question": ["what is written?", "which brand?", "what number?"],
                "answers": [["stop"] * 10, ["nike"] * 7 + ["adidas"] * 3, ["2", "two"] * 5],
                "ocr_tokens": [["stop"], ["nike"], ["2"]],
                "image": _images(N, "textvqa"),
            },
        ),
        "docvqa_val": (
            "docvqa/docvqa_val.yaml",
            "validation",
            {
                "questionId": ["11", "12", "13"],
                "question": ["What is the date?", "Who signed?", "What is the total?"],
                "answers": [["1990"], ["J. Smith", "Smith"], ["$10"]],
                "image": _images(N, "docvqa"),
            },
        ),
        "chartqa": (
            "chartqa/chartqa.yaml",
            "test",
            {
                "question": ["What is the peak value?", "Which year is lowest?", "How many bars?"],
                "answer": ["12", "2004", "5"],
                "type": ["human_test", "augmented_test", "human_test"],
                "image": _images(N, "chartqa"),
            },
        ),
        "ocrbench": (
            "ocrbench/ocrbench.yaml",
            "test",
            {
                "question": ["what is written in the image?"] * 3,
                "answer": [["hello"], ["world"], ["x+1"]],
                "dataset": ["IIIT5K", "ctw", "HME100k"],
                "question_type": [
                    "Regular Text Recognition",
                    "Scene Text-centric VQA",
                    "Handwritten Mathematical Expression Recognition",
                ],
                "image": _images(N, "ocrbench"),
            },
        ),
        "seedbench_ppl": (
            "seedbench/seedbench_ppl.yaml",
            "test",
            {
                "question": ["What color is it?", "Is it round?", "How many?"],
                "choice_a": ["red", "yes", "one"],
                "choice_b": ["green", "no", "two"],
                "choice_c": ["blue", "maybe", "three"],
                "choice_d": ["gray", "never", "four"],
                "answer": ["A", "B", "C"],
                "data_type": ["image"] * 3,
                "question_id": ["q1", "q2", "q3"],
                "image": [[img] for img in _images(N, "seedbench")],
            },
        ),
    }


def _write_dataset(data_dir: Path, yaml_file: Path, split: str, columns: dict[str, list]) -> None:
    """A local copy in the Hub's layout (``DIR/org/name/[config/]<split>-00000-of-00001.parquet``, with the
    README ``configs`` block the Hub uses when the task names a ``dataset_name``)."""
    import datasets

    config = load_yaml_config(yaml_file)
    folder = data_dir / config["dataset_path"]
    name = config.get("dataset_name")
    plain = datasets.Dataset.from_dict({k: v for k, v in columns.items() if k != "image"}).features
    image = columns["image"][0]
    plain["image"] = datasets.Sequence(datasets.Image()) if isinstance(image, list) else datasets.Image()
    parquet = folder / (name or "data") / f"{split}-00000-of-00001.parquet"
    parquet.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(columns, features=plain).to_parquet(str(parquet))
    if name:
        write(
            folder / "README.md",
            f"---\nconfigs:\n- config_name: {name}\n  data_files:\n  - split: {split}\n"
            f"    path: {name}/{split}-*\n---\n",
        )


def _fit_answers(task: str, columns: dict[str, list], samples: dict[int, dict[str, Any]]) -> None:
    """Make some of a random model's answers right, so the compared metrics are not all 0: the gold of doc 0
    (and a near miss for doc 1) is set from the answer the harness's first pass gave. Gold columns are not part
    of any prompt here, so the second pass answers the same prompts (from the response store)."""
    answers = [samples[i]["responses"][0].strip() if samples[i]["responses"] else "" for i in range(N)]
    if task == "textvqa_val" and answers[0]:
        columns["answers"][0] = [answers[0]] * 10
    elif task == "docvqa_val" and answers[0]:
        columns["answers"][0] = [answers[0]]
        columns["answers"][1] = [answers[1][:-1] + "#"] if len(answers[1]) > 2 else columns["answers"][1]
    elif task == "chartqa" and answers[0]:
        columns["answer"][0] = answers[0]
    elif task == "ocrbench" and answers[0]:
        columns["answer"][0] = [answers[0][:4]]
    elif task == "seedbench_ppl":  # the choice with the lowest mean token loss is the gold of doc 0
        losses = [-c["loglikelihood"] / c["tokens"] for c in samples[0]["choices"]]
        columns["answer"][0] = "ABCD"[losses.index(min(losses))]


def _harness(env: dict[str, str], tmp: Path, out: str, names: str, data: Path, includes: list[str]) -> Path:
    """``harness eval`` of the tasks as lmms-eval's llava_hf runs them; its results.json."""
    model = tiny_model_path("llava")
    done = subprocess.run(
        [
            LMMS_PYTHON or "",
            "-m",
            "harness.cli",
            "eval",
            "--model",
            f"hf:{model}",
            "--model-args",
            "device=cpu",
            "--lmms-model",
            "llava_hf",
            "--tasks",
            names,
            "--limit",
            str(N),
            "--data-dir",
            str(data),
            "--output",
            str(tmp / out),
            "--cache",
            str(tmp / "store.sqlite"),
            "--verbosity",
            "quiet",
            *[arg for path in includes for arg in ("--include-path", path)],
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    (results,) = (tmp / out).rglob("results.json")
    return results


def _samples(file: Path) -> dict[int, dict[str, Any]]:
    return {r["doc_id"]: r for r in map(json.loads, file.read_text().splitlines())}


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """The seven tasks run in each tool: (lmms-eval's results and samples, the harness's). The harness runs
    twice: once to learn the model's answers (see _fit_answers), once on the fitted datasets."""
    tmp = tmp_path_factory.mktemp("cross")
    tasks_dir = installed_lmms_tasks()
    data = tmp / "data"
    tasks = _columns()
    includes = [str((tasks_dir / yaml_name).parent) for yaml_name, _, _ in tasks.values()]
    for yaml_name, split, columns in tasks.values():
        _write_dataset(data, tasks_dir / yaml_name, split, columns)
    env = {
        **os.environ,
        "HF_HOME": str(tmp / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    names = ",".join(tasks)
    first = _harness(env, tmp, "first", names, data, includes)
    shutil.rmtree(data)
    for task, (yaml_name, split, columns) in tasks.items():
        _fit_answers(task, columns, _samples(first.parent / f"samples_{task}.jsonl"))
        _write_dataset(data, tasks_dir / yaml_name, split, columns)
    lmms = subprocess.run(
        [
            LMMS_PYTHON or "",
            "-c",
            LMMS_DRIVER,
            "--model",
            "llava_hf",
            "--model_args",
            f"pretrained={tiny_model_path('llava')},device=cpu,device_map=cpu",
            "--tasks",
            names,
            "--batch_size",
            "1",
            "--limit",
            str(N),
            "--output_path",
            str(tmp / "lmms"),
            "--log_samples",
            "--process_docs_parallel",
            "1",
            "--force_simple",
        ],
        cwd=data,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert lmms.returncode == 0, lmms.stderr[-3000:]
    ours = _harness(env, tmp, "ours", names, data, includes)
    assert json.loads(ours.read_text())["provenance"]["requests"]["generated"] == 0  # the same prompts again
    (lmms_results,) = (tmp / "lmms").rglob("*_results.json")
    theirs = {"results": json.loads(lmms_results.read_text())["results"], "samples": {}}
    mine = {"results": json.loads(ours.read_text()), "samples": {}}
    for task in tasks:
        (file,) = (tmp / "lmms").rglob(f"*_samples_{task}.jsonl")
        theirs["samples"][task] = _samples(file)
        mine["samples"][task] = _samples(ours.parent / f"samples_{task}.jsonl")
    return theirs, mine


def _same(ours: Any, theirs: Any) -> bool:
    """Equal values; numbers to 1e-9 (the two tools sum in different orders)."""
    if isinstance(ours, int | float) and isinstance(theirs, int | float):
        return abs(ours - theirs) <= 1e-9
    return bool(ours == theirs)


def _text(value: Any) -> str:
    """The first string inside lmms-eval's nested ``resps`` lists."""
    while isinstance(value, list):
        value = value[0]
    return str(value)


@pytest.mark.parametrize("task", list(_columns()))
def test_lmms_eval_task_gives_lmms_eval_numbers(task: str, both_runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    theirs, mine = both_runs
    lmms_samples, our_samples = theirs["samples"][task], mine["samples"][task]
    assert sorted(lmms_samples) == sorted(our_samples) == list(range(N))
    metrics = {k.split(",")[0] for k in theirs["results"][task] if "," in k and "_stderr" not in k}
    assert metrics, theirs["results"][task]
    for doc_id, lmms in lmms_samples.items():
        record = our_samples[doc_id]
        assert record["error"] is None, record["error"]
        assert record["prompt"][0]["content"][-1]["text"] == lmms["input"], (task, doc_id)
        if record["choices"]:
            losses = [float(loss) for loss, _ in lmms["filtered_resps"]]
            ours = [-c["loglikelihood"] / c["tokens"] for c in record["choices"]]  # the mean token loss
            assert ours == pytest.approx(losses, abs=1e-4), (task, doc_id)
        else:
            # lmms-eval leaves out ``resps`` when the filters left the answer as it was
            assert record["responses"][0] == _text(lmms.get("resps", lmms["filtered_resps"])), (task, doc_id)
        values = {key.split(",")[0]: value for key, value in record["metrics"].items()}  # the task's one filter
        for metric in metrics:
            if metric in lmms:
                assert _same(values[metric], lmms[metric]), (task, doc_id, metric, values.get(metric), lmms[metric])
    for key, value in theirs["results"][task].items():
        if "," in key and "_stderr" not in key:
            assert _same(mine["results"]["results"][task][key], value), (task, key, value)


@pytest.mark.parametrize("task", list(_columns()))
def test_lmms_eval_s_clt_and_clustered_stderrs_agree(
    task: str, both_runs: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    """lmms-eval's ``<metric>_stderr_clt`` and ``<metric>_stderr_clustered`` of every figure: the same keys with
    the same values ("N/A" where lmms-eval writes it); the harness leaves them out of its figures."""
    theirs, mine = both_runs
    ours = mine["results"]["results"][task]
    keys = [k for k in theirs["results"][task] if "_stderr_clt," in k or "_stderr_clustered," in k]
    assert keys, theirs["results"][task]
    for key in keys:
        assert _same(ours[key], theirs["results"][task][key]), (task, key, ours.get(key), theirs["results"][task][key])
    assert not [figure for figure, _ in figures(ours) if figure.is_stderr]
    assert set(mine["results"]["intervals"][task]) == {figure.encoded for figure, _ in figures(ours)}


UNCERTAINTY_CASES: dict[str, Any] = {
    "scores": [1, 0, 1, 1, 0.5, 0, 1, 1],
    "clusters": ["a", "a", "b", None, "b", "c", None, "c"],
    "questions": [[1, 1, 0], [0, 0, 0], [1, 1, 1], [1, 0], [0.5, 1, 1]],
    "current": [1, 1, 0, 1, 0, 1, 1, 0],
    "baseline": [0, 1, 0, 0, 0, 1, 0, 1],
    "power": [
        {"effect_size": 0.03},
        {"effect_size": 0.05, "std_a": 0.4, "current_n": 500},
        {"effect_size": 0.1, "std_a": 0.3, "std_b": 0.45, "correlation": 0.2, "current_n": 80},
    ],
}
LMMS_UNCERTAINTY = """\
import json, sys
from lmms_eval.api import metrics as m
c = json.loads(sys.argv[1])
print(json.dumps({
    "clustered": m.clustered_stderr(c["scores"], c["clusters"]),
    "stability": [f(c["questions"]) for f in (m.expected_accuracy, m.consensus_accuracy, m.internal_variance,
                                              m.consistency_rate)],
    "paired": m.paired_ttest(c["current"], c["baseline"]),
    "power": [{k: float(v) for k, v in m.power_analysis(**p).items()} for p in c["power"]],
}))
"""


def test_the_uncertainty_functions_agree_with_lmms_eval_s_own() -> None:
    """harness.metrics.uncertainty against lmms-eval 0.7.3's functions on the same values. The stability metrics
    are compared here: lmms-eval's evaluator scores answers one by one only when a doc has one request per repeat,
    which its generate_until tasks never have, so its runs with --repeats write none of them."""
    done = subprocess.run(
        [LMMS_PYTHON or "", "-c", LMMS_UNCERTAINTY, json.dumps(UNCERTAINTY_CASES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.splitlines()[-1])
    cases = UNCERTAINTY_CASES
    assert _same(uncertainty.clustered_stderr(cases["scores"], cases["clusters"]), theirs["clustered"])
    ours = [
        fn(cases["questions"])
        for fn in (
            uncertainty.expected_accuracy,
            uncertainty.consensus_accuracy,
            uncertainty.internal_variance,
            uncertainty.consistency_rate,
        )
    ]
    assert all(_same(a, b) for a, b in zip(ours, theirs["stability"], strict=True)), (ours, theirs["stability"])
    paired = uncertainty.paired_ttest(cases["current"], cases["baseline"]).__dict__
    assert all(_same(paired[k], v) for k, v in theirs["paired"].items()), (paired, theirs["paired"])
    for options, expected in zip(cases["power"], theirs["power"], strict=True):
        power = uncertainty.power_analysis(**options).__dict__
        assert {k: v for k, v in power.items() if v is not None} == pytest.approx(expected), (options, expected)


def test_fitted_answers_make_the_compared_metrics_non_trivial(both_runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Doc 0's gold is the model's own answer, so these are above 0 in lmms-eval (and equal in the harness):
    the equality above compares real scores, not only zeros."""
    theirs, _ = both_runs
    for task, key in (
        ("textvqa_val", "exact_match,none"),
        ("docvqa_val", "anls,none"),
        ("chartqa", "relaxed_overall,none"),
        ("ocrbench", "ocrbench_accuracy,none"),
        ("seedbench_ppl", "acc,none"),
    ):
        assert theirs["results"][task][key] > 0, (task, theirs["results"][task])


def test_the_run_records_the_lmms_eval_defaults_it_applied(both_runs: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """TextVQA sets no answer length: llava_hf's 1024 applies, and with --lmms-model llava_hf no task's
    ``until`` does (llava_hf ignores it); both are in the run's config and its generation settings."""
    _, mine = both_runs
    config, generation = mine["results"]["config"], mine["results"]["provenance"]["generation"]
    assert config["lmms_model"] == "llava_hf"
    assert config["applied_defaults"]["textvqa_val"]["max_new_tokens"] == {
        "value": 1024,
        "from": "lmms-eval model llava_hf",
    }
    assert generation["textvqa_val"]["max_new_tokens"] == 1024 and generation["chartqa"]["max_new_tokens"] == 16
    assert generation["textvqa_val"]["until"] == [] and "max_new_tokens" not in config["applied_defaults"]["chartqa"]
