"""Dataset builders: ``harness build NAME`` writes a Hub-layout dataset folder with its card."""

from __future__ import annotations

import importlib
from pathlib import Path

from harness.errors import HarnessError

BUILDERS = {"shapes": "builders.shapes"}


def build_dataset(name: str, out: Path | None, seed: int = 0, push_to_hub: str | None = None) -> Path:
    """Build dataset ``name`` into ``out`` (default: the data dir, where ``harness eval`` looks)."""
    if name not in BUILDERS:
        raise HarnessError(f"unknown dataset {name!r}; builders: {', '.join(sorted(BUILDERS))}")
    module = importlib.import_module(BUILDERS[name])
    if out is None:
        from harness.data import default_data_dir

        out = default_data_dir() / module.REPO_ID
    folder = module.build(out, seed=seed)
    if push_to_hub:
        from builders.publish import push_folder

        push_folder(folder, push_to_hub)
    return folder
