"""Shared fixtures: one harness cache per test session (tiny models and datasets built once)."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A datasets cache of this session's own, set before any test module imports datasets (which reads it at
# import): a folder's cached copy is keyed by its name and layout, not its content, so a shared cache would
# let one run's dataset stand in for another's.
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="harness-test-datasets-")
atexit.register(shutil.rmtree, os.environ["HF_DATASETS_CACHE"], True)


@pytest.fixture(scope="session", autouse=True)
def harness_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Point the harness cache (tiny models, data dir, response store) at a session folder."""
    cache = Path(os.environ.get("HARNESS_TEST_CACHE") or tmp_path_factory.mktemp("harness-cache"))
    os.environ["HARNESS_CACHE"] = str(cache)
    os.environ.pop("HARNESS_DATA_DIR", None)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    return cache


@pytest.fixture(autouse=True)
def default_ctrl_c() -> Iterator[None]:
    """Every test starts and ends with Ctrl-C as a shell delivers it: a library that leaves SIGINT ignored
    (servers and clusters set their own handlers) would make the next test's subprocesses ignore it too."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def data_dir(harness_cache: Path) -> Path:
    """The default data dir with the shapes dataset built into it."""
    from builders import build_dataset
    from harness.data import default_data_dir

    build_dataset("shapes", None, seed=0)
    return default_data_dir()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def saved_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, bytes]:
    """The files of one small run (three docs of shapes_color on tiny:qwen2_vl), to copy into each test's
    own folder."""
    from harness.engine.runner import EvalOptions, evaluate
    from harness.models import create_backend

    out = tmp_path_factory.mktemp("run")
    opts = EvalOptions(
        tasks=["shapes_color"], data_dir=data_dir, limit=3, output=out, use_cache=False, show_progress=False
    )
    _, _, run_dir = evaluate(create_backend("tiny:qwen2_vl"), "tiny:qwen2_vl", opts)
    assert run_dir is not None
    return {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}


@pytest.fixture(scope="session")
def stealth_dir(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Stealth build (3 sentences per sentiment subset, 2 questions) where eval finds it."""
    from builders import build_dataset
    from tests.protocols.stealth.fixtures import write_squad

    squad = write_squad(tmp_path_factory.mktemp("squad") / "squad.json", n=12)
    return build_dataset("stealth", None, seed=0, squad=str(squad), sentences=3, questions=2, workers=2)


@pytest.fixture(scope="session")
def mist_dir(data_dir: Path) -> Path:
    """The MIST demo set (AdMIRe-format, six eligible compounds) where eval finds it."""
    from builders import build_dataset

    return build_dataset("mist", None, demo=True)


@pytest.fixture(scope="session")
def diavlo_sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    """The four DiaVLo sources in their release formats, and Visual Genome-format scene graphs."""
    from builders.diavlo.demo import write_sources

    return write_sources(tmp_path_factory.mktemp("diavlo-sources"))


@pytest.fixture(scope="session")
def diavlo_dir(data_dir: Path) -> Path:
    """The uncurated DiaVLo demo set (annotations, else tiny OWLv2 + tiny Qwen2-VL relations) where eval finds it."""
    from builders import build_dataset

    return build_dataset("diavlo", None, demo=True, detector="tiny:owlv2", relation_model="tiny:qwen2_vl")


@pytest.fixture(scope="session")
def fusion_dir(data_dir: Path) -> Path:
    """The FusionAudit demo set (ChartQA/DocVQA/MME formats, 2 per source) with the tiny editor."""
    from builders import build_dataset

    return build_dataset("fusion", None, seed=0, per_source=2, editor="tiny,steps=1,size=32", demo=True)


def run_harness(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m harness.cli ARGS`` in a fresh process from ``cwd``, importing this checkout's code."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


@pytest.fixture(scope="session")
def five(
    tmp_path_factory: pytest.TempPathFactory, stealth_dir: Path, mist_dir: Path, fusion_dir: Path, diavlo_dir: Path
) -> Path:
    """Tiny-model runs of the five protocols and their audits, with hostile strings (tests/five_protocols.py)."""
    from tests.five_protocols import build_five

    return build_five(tmp_path_factory.mktemp("five"))
