"""A ``pip install .`` user gets tasks/ and cards/ inside the wheel, found by the same lookups."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


def test_wheel_ships_tasks_and_cards(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                           "-w", str(tmp_path), "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("harness/_bundled/tasks/shapes/shapes_color.yaml", "harness/_bundled/tasks/shapes/utils.py",
                     "harness/_bundled/tasks/shapes/_default_template_yaml", "harness/_bundled/cards/shapes.md",
                     "harness/cli.py", "builders/shapes.py"):
        assert expected in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("from harness.taskspec.registry import bundled_tasks_dir; from builders.publish import bundled_cards_dir;"
            "print(bundled_tasks_dir()); print(bundled_cards_dir())")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(site / "harness/_bundled/tasks"), str(site / "harness/_bundled/cards")]
