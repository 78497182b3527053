"""``harness build fusion --demo``: FusionAudit builds offline from its self-made sources, by its alias too
(the other demo builds: tests/builders/test_demo_builds.py)."""

from __future__ import annotations

from pathlib import Path

from harness.cli import main
from harness.protocols.fusion.rows import FusionRow
from tests.builders.test_demo_builds import load


def test_fusion_demo_without_editor(tmp_path: Path) -> None:
    """Built by its command-line alias, ``fusionaudit``: the paper's name answers as ``fusion`` does."""
    argv = ["build", "fusionaudit", "--demo", "--editor", "none", "--per-source", "1", "--out", str(tmp_path / "f")]
    assert main([*argv, "--verbosity", "quiet"]) == 0
    rows = load(tmp_path / "f", tmp_path / "hf")["test"]
    assert sorted(rows["source"]) == ["chartqa", "docvqa", "mme"] and rows[0]["typo_image"] is not None
    assert rows.features == FusionRow.features()
