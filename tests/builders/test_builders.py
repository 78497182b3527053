"""The shapes builder: deterministic, Hub layout that load_dataset reads, a card that validates."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from builders import build_dataset
from builders.shapes import ShapesRow
from harness.builder_spec import Builder
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
    assert len(ds) == 96 and ds.features == ShapesRow.features()
    assert ds[0]["image"].size == (56, 56) and ds[0]["color"] == "red"
    card = DatasetCard.load(a / "README.md")
    assert card.data.license == "cc0-1.0" and card.data.configs[0]["data_files"][0]["split"] == "test"
    assert "seed 3" in card.text


def test_shapes_row_features_are_the_builders_features() -> None:
    """``ShapesRow`` generates the Features the shapes builder wrote before it wrote ``ShapesRow``s."""
    assert repr(ShapesRow.features()) == (
        "{'id': Value('string'), 'image': Image(mode=None, decode=True), 'color': Value('string'), "
        "'kind': Value('string')}"
    )


def test_unknown_builder() -> None:
    with pytest.raises(HarnessError, match="unknown dataset 'nope'"):
        build_dataset("nope", None)


def test_builder_module_is_loaded_typed_and_one_lacking_its_names_is_refused() -> None:
    shapes = Builder("shapes", "builders.shapes", "synthetic shapes").load()
    assert shapes.REPO_ID == "vlm-audit/shapes" and shapes.Options().seed == 0
    with pytest.raises(HarnessError) as err:
        Builder("broken", "builders.options", "not a builder").load()
    assert str(err.value) == "builder 'broken': module builders.options has no REPO_ID, Options, build"


def test_builder_flags_and_settings_come_from_its_options_class(capsys: pytest.CaptureFixture) -> None:
    from harness.cli import build_parser, main

    args = build_parser().parse_args(
        ["build", "mist", "--admire", "a.tsv", "--n", "5", "-O", "admire=b.tsv", "-O", "demo=yes", "--out", "o"]
    )
    assert (args.request.name, args.request.out) == ("mist", Path("o"))
    assert args.request.values == {"admire": ("a.tsv", "b.tsv"), "n": 5, "demo": True}
    topics = build_parser().parse_args(["build", "vista", "--topics", "ai,tesla", "--topics", "meta"]).request
    assert topics.values == {"topics": ("ai", "tesla", "meta")}
    for argv, message in (
        (["-O", "n=many"], "--n expects int, got 'many'"),
        (["-O", "n"], "-O expects KEY=VALUE, got 'n'"),
        (
            ["-O", "squad=x"],
            "option(s) --squad do not apply to the mist builder (its options: "
            "--seed, --admire, --images, --humans, --n, --demo)",
        ),
    ):
        assert main(["build", "mist", *argv]) == 2
        assert capsys.readouterr().err.strip() == f"error: {message}"
