"""Where a result came from: harness version and git revision, package versions, host."""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import harness

_PACKAGES = ("torch", "torchvision", "transformers", "datasets", "tokenizers", "accelerate", "pillow", "lmms-eval")


def git_revision() -> str | None:
    """The commit of the harness source: the checkout's HEAD (``-dirty`` with local changes) when run from
    one, else the commit recorded at build time (harness/_build_info.py, written by hatch_build.py)."""
    root = Path(harness.__file__).resolve().parent.parent
    try:
        top = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=5
        )
        if top.returncode == 0 and Path(top.stdout.strip()).resolve() == root:
            rev = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
            ).stdout.strip()
            dirty = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--", "harness", "tasks"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
            return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        build_info = importlib.import_module("harness._build_info")
    except ImportError:
        return None
    return str(build_info.GIT_COMMIT)


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that change results (missing ones left out)."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def environment() -> dict[str, Any]:
    """The software a run ran on: harness version and commit, package versions, Python and platform."""
    return {
        "harness_version": harness.__version__,
        "git_revision": git_revision(),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "command": sys.argv,
    }
