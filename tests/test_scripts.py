"""The two commands the README opens with: scripts/demo and scripts/test (readme-check runs them whole)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("name", ["demo", "test", "setup"])
def test_the_scripts_parse_and_the_commands_are_executable(name: str) -> None:
    script = ROOT / "scripts" / name
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
    assert os.access(script, os.X_OK) == (name != "setup")  # setup is sourced by the other two


def test_the_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = readme[: readme.index("## Contents")]
    blocks = [b.split("```")[0].strip() for b in first_screen.split("```bash\n")[1:]]
    assert [b.split()[0] for b in blocks] == ["scripts/demo", "scripts/test"]
