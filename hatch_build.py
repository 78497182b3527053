"""Build hook: record the source commit in ``harness/_build_info.py`` so an installed copy (no .git) still
reports which revision its results came from (see harness.provenance.git_revision)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

INFO = "harness/_build_info.py"


def source_commit(root: str) -> str | None:
    """HEAD of the checkout at ``root`` (``-dirty`` with local changes to shipped code), or None outside git."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", root, *args], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != Path(root).resolve():
            return None  # a copy inside some other repository: that repository's HEAD is not ours
        dirty = git("status", "--porcelain", "--", "harness", "builders", "tasks", "cards")
        return git("rev-parse", "HEAD") + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


class CustomBuildHook(BuildHookInterface):
    """Adds the generated file to wheels and sdists; editable installs read git directly."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        commit = source_commit(self.root)
        if version == "editable" or commit is None:
            return  # an sdist's own _build_info.py (if any) ships as it is
        self._tmp = Path(tempfile.mkdtemp(prefix="harness-build-info-"))
        info = self._tmp / "_build_info.py"
        info.write_text(
            f'"""Written at build time by hatch_build.py."""\n\nGIT_COMMIT = {commit!r}\n', encoding="utf-8"
        )
        build_data["force_include"][str(info)] = INFO

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if getattr(self, "_tmp", None) is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
