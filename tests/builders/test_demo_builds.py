"""``harness build NAME --demo``: MIST, FusionAudit and DiaVLo build offline from their self-made
sources with no other argument, load with ``load_dataset`` after the temporary source is gone, and
refuse real source options beside ``--demo``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.protocols.diavlo.rows import DiavloRow
from harness.protocols.fusion.rows import FusionRow
from harness.protocols.mist.rows import MistRow


def _load(folder: Path, cache: Path):
    from datasets import load_dataset

    return load_dataset(str(folder), cache_dir=str(cache))


def test_mist_and_diavlo_demo_builds_load(tmp_path: Path, harness_cache: Path) -> None:
    assert main(["build", "mist", "--demo", "--out", str(tmp_path / "mist"), "--verbosity", "quiet"]) == 0
    mist = _load(tmp_path / "mist", tmp_path / "hf")["test"]
    assert len(mist) == 6 and mist[0]["aligned_image"].size == (96, 64)  # images embedded, source removed
    assert mist.features == MistRow.features()
    assert main(["build", "diavlo", "--demo", "--out", str(tmp_path / "diavlo"), "--verbosity", "quiet"]) == 0
    diavlo = _load(tmp_path / "diavlo", tmp_path / "hf")
    assert set(diavlo) == {"llava_bench", "mmbench", "seed_bench2", "vqav2"}
    assert all(len(split) == 3 and split.features == DiavloRow.features() for split in diavlo.values())
    assert diavlo["vqav2"][0]["sk_triplets"][0]["subject"] == "red box"


def test_fusion_demo_without_editor(tmp_path: Path) -> None:
    """Built by its command-line alias, ``fusionaudit``: the paper's name answers as ``fusion`` does."""
    argv = ["build", "fusionaudit", "--demo", "--editor", "none", "--per-source", "1", "--out", str(tmp_path / "f")]
    assert main([*argv, "--verbosity", "quiet"]) == 0
    rows = _load(tmp_path / "f", tmp_path / "hf")["test"]
    assert sorted(rows["source"]) == ["chartqa", "docvqa", "mme"] and rows[0]["typo_image"] is not None
    assert rows.features == FusionRow.features()


@pytest.mark.parametrize(
    ("argv", "flags"),
    [
        (["mist", "--humans", "h.json"], "--humans"),
        (["fusion", "--chartqa", "c.json", "--mme", "m"], "--chartqa, --mme"),
        (["diavlo", "--scene-graphs", "g.json"], "--scene-graphs"),
    ],
)
def test_demo_refuses_real_sources(capsys: pytest.CaptureFixture, tmp_path: Path, argv: list[str], flags: str) -> None:
    assert main(["build", *argv, "--demo", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and f"--demo writes its own source; drop {flags}" in err
