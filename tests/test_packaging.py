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
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "harness/_bundled/tasks/shapes/shapes_color.yaml",
        "harness/_bundled/tasks/shapes/utils.py",
        "harness/_bundled/tasks/shapes/_default_template_yaml",
        "harness/_bundled/cards/shapes.md",
        "harness/cli/__init__.py",
        "builders/shapes.py",
    ):
        assert expected in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires: dict[str, set[str]] = {}
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:") and "; extra == " in line:
            req, extra = line.removeprefix("Requires-Dist:").strip().split("; extra == ")
            requires.setdefault(extra.strip("'\""), set()).add(req)
    runtime = ("stealth", "openai", "vista", "diavlo", "fusion", "leaderboard", "serving", "ray")
    assert requires["all"] == set().union(*(requires[e] for e in runtime))  # [all]: every runtime part
    # Installed inside some other git checkout (a venv in a project folder): that checkout's HEAD is not ours.
    other = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(other),
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    site = other / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "from harness.taskspec.registry import bundled_tasks_dir; from builders.publish import bundled_cards_dir;"
        "from harness.provenance import environment; import json;"
        "print(bundled_tasks_dir()); print(bundled_cards_dir()); env = environment();"
        "print(env['git_revision']); print(env['harness_version'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    tasks, cards, revision, version = out.stdout.split()
    assert [tasks, cards] == [str(site / "harness/_bundled/tasks"), str(site / "harness/_bundled/cards")]
    # Installed without .git, the results still name the source commit the wheel was built from.
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert revision.removesuffix("-dirty") == head.strip() and version == wheel.name.split("-")[1]
