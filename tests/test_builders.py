"""The shapes builder: deterministic, Hub layout that load_dataset reads, a card that validates."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from builders import build_dataset
from harness.errors import HarnessError


def _digest(folder: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(folder.rglob("*.parquet")))).hexdigest()


def test_build_is_deterministic_and_loads_with_load_dataset(tmp_path: Path) -> None:
    from datasets import load_dataset
    from huggingface_hub import DatasetCard

    a = build_dataset("shapes", tmp_path / "a", seed=3)
    b = build_dataset("shapes", tmp_path / "b", seed=3)
    c = build_dataset("shapes", tmp_path / "c", seed=4)
    assert _digest(a) == _digest(b) != _digest(c)
    ds = load_dataset(str(a), split="test")
    assert len(ds) == 96 and set(ds.column_names) == {"id", "image", "color", "kind"}
    assert ds[0]["image"].size == (56, 56) and ds[0]["color"] == "red"
    card = DatasetCard.load(a / "README.md")
    assert card.data.license == "cc0-1.0" and card.data.configs[0]["data_files"][0]["split"] == "test"
    assert "seed 3" in card.text


def test_unknown_builder() -> None:
    with pytest.raises(HarnessError, match="unknown dataset 'nope'"):
        build_dataset("nope", None)
