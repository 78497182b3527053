"""Golden runs: the commands whose outputs ``tests/test_behaviour_unchanged.py`` holds to the files kept
here, and the means to write those files again.

Each run is ``harness build`` and ``harness eval`` on ``tiny:qwen2_vl`` (built from its recipe into a fresh
cache), each command in a fresh process with one CPU thread, so the outputs are the same in every process.
``samples_<task>.jsonl`` must come out byte for byte as kept; ``results.json`` must equal the kept one once
the fields that describe the machine, the software or the clock are set aside (:data:`UNCOMPARED`) and the
task YAML paths are made relative to the checkout (:func:`comparable`).

Regenerate only when a change of behaviour is meant (a new task prompt, a new metric), and say so in the
commit: ``python -m tests.golden.regenerate --overwrite``. Without ``--overwrite`` it refuses to replace
files that are already there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
MODEL = "tiny:qwen2_vl"

#: The datasets every run reads: the demo shapes (8 images) and the MIST demo (6 compounds x 20 arms).
BUILDS: tuple[tuple[str, ...], ...] = (
    ("build", "shapes", "--n", "8", "--seed", "0", "--out", "{data}/vlm-audit/shapes"),
    ("build", "mist", "--demo", "--out", "{data}/vlm-audit/mist"),
)
#: Run name -> its ``harness eval`` options. ``greedy``: the demo group and a protocol task with the tasks'
#: own settings (MIST's 256-token answers, long enough to differ between its image arms). ``sampled``:
#: per-request seeds, several answers per prompt and batching.
RUNS: dict[str, tuple[str, ...]] = {
    "greedy": ("--tasks", "shapes,mist", "--limit", "6"),
    "sampled": (
        "--tasks",
        "shapes_color",
        "--limit",
        "4",
        "--seed",
        "3",
        "--repeats",
        "2",
        "--batch-size",
        "2",
        "--gen-kwargs",
        "temperature=1.0,top_p=0.9,max_new_tokens=12",
    ),
}

#: ``results.json`` fields that say where, when and with what software a run was made, not what it
#: computed: dotted paths, ``*`` for every key of a mapping.
UNCOMPARED: tuple[str, ...] = (
    "provenance.harness_version",
    "provenance.git_revision",
    "provenance.packages",
    "provenance.python",
    "provenance.platform",
    "provenance.command",  # the command line as typed: absolute folders of this machine
    "provenance.model.model",  # the tiny model's folder in the cache
    # the tiny model's files hashed: its config files record the transformers version that wrote them
    # (the weights and answers are the same under 5.24 and 5.25), so it records the software too
    "provenance.model.fingerprint",
    "provenance.datasets.*.path",  # the local dataset folder
    "provenance.started_at",
    "provenance.wall_time_s",
    "provenance.generation_time_s",
    "provenance.throughput_samples_per_s",
)
#: Fields holding an absolute path inside the checkout, compared relative to it.
CHECKOUT_PATHS: tuple[str, ...] = ("configs.*.source",)


def _env(work: Path, index: int) -> dict[str, str]:
    """A clean environment: this checkout's code, a fresh harness cache (shared by the commands: the tiny
    model is built once, under a lock) and a datasets cache of the ``index``-th command's own, offline, one
    CPU thread (a float sum split over threads may round differently from one machine to another)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HARNESS_", "HF_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        HARNESS_CACHE=str(work / "cache"),
        HF_DATASETS_CACHE=str(work / f"hf-datasets-{index}"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    return env


def _run_together(commands: list[list[str]], work: Path) -> None:
    """Run ``harness COMMAND`` for each command at once, each in its own process; fail on the first failure."""
    procs = [
        (
            args,
            subprocess.Popen(
                [sys.executable, "-m", "harness.cli", *args, "--verbosity", "quiet"],
                cwd=work,
                env=_env(work, k),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for k, args in enumerate(commands)
    ]
    failures = []
    for args, proc in procs:
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures.append(f"harness {' '.join(args)} failed ({proc.returncode}):\n{err[-4000:]}")
    if failures:
        raise RuntimeError("\n".join(failures))


def run_all(work: Path) -> dict[str, Path]:
    """Build the datasets under ``work``, side by side, then run every golden run there, side by side;
    run name -> its run folder."""
    data = work / "data"
    _run_together([[part.format(data=data) for part in build] for build in BUILDS], work)
    outputs = {name: work / "runs" / name for name in RUNS}
    _run_together(
        [
            ["eval", "--model", MODEL, *options, "--data-dir", str(data), "--no-cache", "--output", str(outputs[name])]
            for name, options in RUNS.items()
        ],
        work,
    )
    return {name: next(out.glob("*/*/results.json")).parent for name, out in outputs.items()}


def _drop(node: Any, parts: list[str]) -> None:
    """Remove the dotted path ``parts`` from ``node`` (``*``: under every key)."""
    if not isinstance(node, dict) or not parts:
        return
    head, rest = parts[0], parts[1:]
    keys = list(node) if head == "*" else [head] if head in node else []
    for key in keys:
        if rest:
            _drop(node[key], rest)
        else:
            del node[key]


def _relative(node: Any, parts: list[str]) -> None:
    """Rewrite the path at ``parts`` as relative to the checkout (``*``: under every key)."""
    head, rest = parts[0], parts[1:]
    for key in list(node) if head == "*" else [head] if head in node else []:
        if rest:
            _relative(node[key], rest)
        elif isinstance(node[key], str) and Path(node[key]).is_relative_to(ROOT):
            node[key] = Path(node[key]).relative_to(ROOT).as_posix()


def comparable(results_json: Path) -> dict[str, Any]:
    """``results.json`` without the :data:`UNCOMPARED` fields, the :data:`CHECKOUT_PATHS` made relative."""
    results = json.loads(results_json.read_text(encoding="utf-8"))
    for field in UNCOMPARED:
        _drop(results, field.split("."))
    for field in CHECKOUT_PATHS:
        _relative(results, field.split("."))
    return results


def golden_files(run_dir: Path) -> list[Path]:
    """The files of a run folder that are kept: its samples files and its results."""
    return sorted(p for p in run_dir.iterdir() if p.name.startswith("samples_") or p.name == "results.json")


def main(argv: list[str] | None = None) -> int:
    """Run the golden commands and write their outputs under ``tests/golden/<run>/``."""
    parser = argparse.ArgumentParser(prog="python -m tests.golden.regenerate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--overwrite", action="store_true", help="replace golden files that already exist")
    args = parser.parse_args(argv)
    existing = sorted(p for name in RUNS for p in (GOLDEN / name).glob("*") if p.is_file())
    if existing and not args.overwrite:
        print(
            f"error: {len(existing)} golden file(s) exist under {GOLDEN}; pass --overwrite to replace them",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="harness-golden-") as tmp:
        for name, run_dir in run_all(Path(tmp)).items():
            target = GOLDEN / name
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            for path in golden_files(run_dir):
                if path.name == "results.json":  # kept comparable, so it does not record this machine
                    text = json.dumps(comparable(path), indent=2, ensure_ascii=False) + "\n"
                    (target / path.name).write_text(text, encoding="utf-8")
                else:
                    shutil.copyfile(path, target / path.name)
                print(f"wrote {(target / path.name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
