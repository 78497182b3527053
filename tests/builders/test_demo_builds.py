"""``harness build NAME --demo``: MIST, FusionAudit and DiaVLo build offline from their self-made
sources with no other argument, load with ``load_dataset`` after the temporary source is gone, and
refuse real source options beside ``--demo``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.protocols.diavlo.rows import DiavloRow
from harness.protocols.mist.rows import MistRow


def load(folder: Path, cache: Path):
    """A built folder as ``load_dataset`` reads it, its cache in ``cache``."""
    from datasets import load_dataset

    return load_dataset(str(folder), cache_dir=str(cache))


def test_mist_and_diavlo_demo_buildsload(tmp_path: Path, harness_cache: Path) -> None:
    assert main(["build", "mist", "--demo", "--out", str(tmp_path / "mist"), "--verbosity", "quiet"]) == 0
    mist = load(tmp_path / "mist", tmp_path / "hf")["test"]
    assert len(mist) == 6 and mist[0]["aligned_image"].size == (96, 64)  # images embedded, source removed
    assert mist.features == MistRow.features()
    assert main(["build", "diavlo", "--demo", "--out", str(tmp_path / "diavlo"), "--verbosity", "quiet"]) == 0
    diavlo = load(tmp_path / "diavlo", tmp_path / "hf")
    assert set(diavlo) == {"llava_bench", "mmbench", "seed_bench2", "vqav2"}
    assert all(len(split) == 3 and split.features == DiavloRow.features() for split in diavlo.values())
    assert diavlo["vqav2"][0]["sk_triplets"][0]["subject"] == "red box"


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
