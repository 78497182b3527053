"""Dataset builders: ``harness build NAME`` writes a Hub-layout dataset folder with its card."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

BUILDERS = {"shapes": "builders.shapes", "stealth": "builders.stealth", "mist": "builders.mist",
            "vista": "builders.vista", "diavlo": "builders.diavlo",
            "fusionaudit": "builders.fusion.build"}


def build_dataset(name: str, out: Path | None, seed: int | None = None, push_to_hub: str | None = None,
                  **options: Any) -> Path:
    """Build dataset ``name`` into ``out`` (default: the data dir, where ``harness eval`` looks);
    ``options`` are builder-specific (stealth: ``font``, ``squad``, ``subsets``, ``workers``; mist:
    ``admire``, ``images``, ``humans``, ``n``; vista: ``images``, ``generator``, ``steps``, ``guidance``,
    ``image_size``, ``reject``, ``topics``; diavlo: ``sources``, ``per_source``, ``scene_graphs``, ``detector``,
    ``relation_model``, ``max_candidates``, ``curation_out``, ``curated``; fusionaudit: ``per_source``,
    ``editor``, ``chartqa``, ``docvqa``, ``mme``)."""
    if name not in BUILDERS:
        raise HarnessError(f"unknown dataset {name!r}; builders: {', '.join(sorted(BUILDERS))}")
    module = importlib.import_module(BUILDERS[name])
    if out is None:
        from harness.data import default_data_dir

        out = default_data_dir() / module.REPO_ID
    accepted = set(inspect.signature(module.build).parameters)
    extra = sorted(set(options) - accepted)
    if extra:
        raise HarnessError(f"option(s) {', '.join('--' + e for e in extra)} do not apply to the {name} builder")
    if seed is not None:
        options["seed"] = seed  # else the builder's own default (mist: the paper's 123)
    folder = module.build(out, **options)
    if push_to_hub:
        from builders.publish import push_folder

        push_folder(folder, push_to_hub)
    return folder
