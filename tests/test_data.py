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
    by_files = load_task_dataset(cfg(dataset_path="parquet", dataset_kwargs={"data_files": {"test": str(parquet)}}),
                                 None)
    assert len(by_files.docs) == 96 and by_files.fingerprint["kind"] == "hub"


def test_missing_dataset_and_split_fail_clearly(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"'nobody/nothing' is not available .*offline, put a copy at"):
        load_task_dataset(cfg(dataset_path="nobody/nothing"), tmp_path)
    with pytest.raises(DatasetError, match="no split 'validation'|cannot read"):
        load_task_dataset(cfg(dataset_path="vlm-audit/shapes", test_split="validation"), data_dir)
    with pytest.raises(DatasetError, match="no dataset_path"):
        load_task_dataset(cfg(), data_dir)


def test_a_folder_rebuilt_in_place_is_not_served_from_a_stale_cache(tmp_path: Path) -> None:
    from builders import shapes

    folder = tmp_path / "org" / "shapes"
    shapes.build(folder, n=5)
    first = load_task_dataset(cfg(dataset_path="org/shapes"), tmp_path)
    shapes.build(folder, n=7)
    second = load_task_dataset(cfg(dataset_path="org/shapes"), tmp_path)
    assert (len(first.docs), len(second.docs)) == (5, 7)
    assert first.fingerprint["sha256"] != second.fingerprint["sha256"]
