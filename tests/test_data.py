"""Dataset resolution: Hub ids mapped to local copies, save_to_disk folders, data_files, fingerprints."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data import load_task_dataset, resolve_path
from harness.errors import DatasetError
from harness.taskspec.config import TaskConfig

BASE = {"task": "t", "doc_to_text": "q", "metric_list": [{"metric": "exact_match"}], "test_split": "test"}


def cfg(**kw) -> TaskConfig:
    return TaskConfig.from_dict({**BASE, **kw}, Path("t.yaml"))


def test_hub_id_maps_to_data_dir_copy(data_dir: Path, tmp_path: Path) -> None:
    assert resolve_path("vlm-audit/shapes", data_dir) == (str(data_dir / "vlm-audit/shapes"), True)
    assert resolve_path("vlm-audit/shapes", tmp_path) == ("vlm-audit/shapes", False)
    loaded = load_task_dataset(cfg(dataset_path="vlm-audit/shapes"), data_dir)
    assert len(loaded.docs) == 96 and loaded.fingerprint["kind"] == "local"
    again = load_task_dataset(cfg(dataset_path="vlm-audit/shapes"), data_dir)
    assert again.fingerprint["sha256"] == loaded.fingerprint["sha256"]


def test_save_to_disk_folder_and_data_files(data_dir: Path, tmp_path: Path) -> None:
    shapes = load_task_dataset(cfg(dataset_path="vlm-audit/shapes"), data_dir).docs.select(range(5))
    from datasets import DatasetDict

    DatasetDict({"test": shapes}).save_to_disk(str(tmp_path / "org" / "saved"))
    for kwargs in ({}, {"dataset_kwargs": {"load_from_disk": True}}):
        loaded = load_task_dataset(cfg(dataset_path="org/saved", **kwargs), tmp_path)
        assert len(loaded.docs) == 5
    parquet = next((data_dir / "vlm-audit/shapes/data").glob("*.parquet"))
    by_files = load_task_dataset(
        cfg(dataset_path="parquet", dataset_kwargs={"data_files": {"test": str(parquet)}}), None
    )
    assert len(by_files.docs) == 96 and by_files.fingerprint["kind"] == "hub"


def test_missing_dataset_and_split_fail_clearly(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError,
        match=r"'nobody/nothing' is not available \(offline: HF_HUB_OFFLINE is set\); "
        "put a copy at",
    ):
        load_task_dataset(cfg(dataset_path="nobody/nothing"), tmp_path)
    with pytest.raises(DatasetError, match=r"split 'validation' not built \(the local copy .* has test; "):
        load_task_dataset(cfg(dataset_path="vlm-audit/shapes", test_split="validation"), data_dir)
    with pytest.raises(DatasetError, match="no dataset_path"):
        load_task_dataset(cfg(), data_dir)


def test_a_folder_rebuilt_in_place_is_not_served_from_a_stale_cache(tmp_path: Path) -> None:
    from builders import shapes

    folder = tmp_path / "org" / "shapes"
    shapes.build(folder, shapes.Options(n=5))
    first = load_task_dataset(cfg(dataset_path="org/shapes"), tmp_path)
    shapes.build(folder, shapes.Options(n=7))
    second = load_task_dataset(cfg(dataset_path="org/shapes"), tmp_path)
    assert (len(first.docs), len(second.docs)) == (5, 7)
    assert first.fingerprint["sha256"] != second.fingerprint["sha256"]


def test_unreachable_hub_reports_every_missing_dataset_at_once_with_its_build_command(tmp_path: Path) -> None:
    """No HF_HUB_OFFLINE, a Hub that does not answer: found out once, fast, and every dataset is named."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT, write

    write(
        tmp_path / "extra" / "t.yaml",
        "# a task on a dataset nobody builds\ntask: nodata\n"
        "dataset_path: someorg/not-here\ndoc_to_text: q\nmetric_list:\n  - metric: exact_match\n",
    )
    with socket.socket() as sock:  # a loopback port nothing listens on: the Hub is unreachable
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "hf"))
    data = tmp_path / "data"
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "eval",
            "--model",
            "tiny:qwen2_vl",
            "--tasks",
            "vista,mist,nodata",
            "--data-dir",
            str(data),
            "--include-path",
            str(tmp_path / "extra"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.monotonic() - start
    assert done.returncode == 2
    warning, line = done.stderr.strip().splitlines()  # the probe says once that it works offline
    assert warning.startswith("WARNING harness.hub: the Hugging Face Hub (http://127.0.0.1:") and "offline" in warning
    assert line.startswith("error: 3 datasets are not available (the Hugging Face Hub is not reachable")
    assert f"build it: harness build vista --output {data / 'vlm-audit/vista'}" in line
    assert f"harness build mist --admire ROWS --images DIR --humans FILE --output {data / 'vlm-audit/mist'}" in line
    assert f"'someorg/not-here' (task nodata): put a copy at {data / 'someorg/not-here'}" in line
    assert elapsed < 30, elapsed


def test_a_local_folder_without_the_split_says_how_files_name_their_splits(tmp_path: Path) -> None:
    from datasets import Dataset

    folder = tmp_path / "org" / "vals"
    folder.mkdir(parents=True)
    Dataset.from_dict({"q": ["a", "b"]}).to_parquet(str(folder / "val-00000.parquet"))
    with pytest.raises(DatasetError) as caught:
        load_task_dataset(cfg(dataset_path="org/vals", test_split="val"), tmp_path)
    assert str(caught.value) == (
        f"task t: split 'val' not built (the local copy {folder} has validation; save the split into it); "
        "a folder of data files has its splits named by the files: train-*, "
        "test-*, and validation for val-*, valid-*, dev-* or eval-*; another split name is declared in the "
        "folder's README.md (configs: [{config_name: default, data_files: [{split: NAME, path: NAME-*.parquet}]}])"
    )
    assert len(load_task_dataset(cfg(dataset_path="org/vals", test_split="validation"), tmp_path).docs) == 2


def test_a_builders_copy_without_the_split_is_worded_as_harness_tasks_words_it(data_dir: Path) -> None:
    from builders import build_hint

    folder = data_dir / "vlm-audit" / "shapes"
    with pytest.raises(DatasetError) as caught:
        load_task_dataset(cfg(dataset_path="vlm-audit/shapes", test_split="vqa"), data_dir, build_hint)
    assert str(caught.value) == (
        f"task t: split 'vqa' not built (the local copy {folder} has test; build it: harness build shapes)"
    )


def test_task_code_that_loads_a_second_dataset_reads_it_under_the_data_dir(tmp_path: Path) -> None:
    """As lmms-eval's gqa: process_docs loads its images from another dataset with ``load_dataset``."""
    from datasets import Dataset

    from harness.engine.tasks import open_task
    from tests.conftest import write

    data = tmp_path / "data"
    for name, rows in (
        ("questions", {"q": ["a", "b"], "image_id": [1, 2]}),
        ("images", {"id": [2, 1], "px": [20, 10]}),
    ):
        (data / "org" / name).mkdir(parents=True)
        Dataset.from_dict(rows).to_parquet(str(data / "org" / name / "test-00000.parquet"))
    tasks = tmp_path / "tasks"
    write(
        tasks / "two.yaml",
        "task: two\ndataset_path: org/questions\ntest_split: test\ndoc_to_text: q\n"
        "process_docs: !function utils.join_images\nmetric_list:\n  - metric: exact_match\n",
    )
    write(
        tasks / "utils.py",
        "from datasets import load_dataset\n\n\n"
        "def join_images(dataset):\n"
        "    images = load_dataset('org/images', split='test', token=True)\n"
        "    px = dict(zip(images['id'], images['px']))\n"
        "    return dataset.map(lambda doc: {'px': px[doc['image_id']]})\n",
    )
    opened = open_task("two", None, data, include_paths=[tasks])
    assert list(opened.docs["px"]) == [10, 20]
    import datasets

    assert datasets.load_dataset.__name__ == "load_dataset"  # restored after the task's code ran
