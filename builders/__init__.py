"""Dataset builders: ``harness build NAME`` writes a Hub-layout dataset folder with its card."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


@dataclass(frozen=True)
class Builder:
    """A dataset builder as ``harness build --help`` lists it and a missing-dataset error names it."""

    module: str
    description: str
    extra: str | None = None  # the pip extra its optional dependencies come from
    inputs: str = ""  # the source options a build needs (the builder fetches nothing else)


BUILDERS = {
    "shapes": Builder("builders.shapes", "synthetic colored shapes for offline demos and tests"),
    "stealth": Builder("builders.stealth", "Stealth Prompt Testset: text rendered in styles that alone change it",
                       "stealth", "[--squad FILE]"),
    "mist": Builder("builders.mist", "Misleading-Image Stress Test from AdMIRe-format rows", None,
                    "--admire ROWS --images DIR --humans FILE"),
    "vista": Builder("builders.vista", "VISTA topic images x neutral prompts (generated or photographs)", "vista"),
    "diavlo": Builder("builders.diavlo", "DiaVLo SHOULD-KNOW triplets with boxes over four VQA sources", "diavlo",
                      "--sources NAME=PATH,..."),
    "fusionaudit": Builder("builders.fusion.build", "FusionAudit items with their rendered-text variants", "fusion",
                           "[--chartqa SRC --docvqa SRC --mme SRC]"),
}


def builders_help() -> str:
    """One line per builder (name, what it builds, its extra) for ``harness build --help``."""
    return "\n".join(f"  {name:<12} {b.description}" + (f" [extra: {b.extra}]" if b.extra else "")
                     for name, b in BUILDERS.items())


def builder_for(dataset_path: str) -> str | None:
    """The builder whose dataset is ``dataset_path`` (a Hub id such as vlm-audit/vista), if any."""
    for name, b in BUILDERS.items():
        if getattr(importlib.import_module(b.module), "REPO_ID", None) == dataset_path:
            return name
    return None


def build_command(name: str, out: Path | None = None) -> str:
    """The ``harness build`` command line that makes dataset ``name`` (into ``out`` when not the default)."""
    parts = ["harness build", name, BUILDERS[name].inputs, f"--out {out}" if out else ""]
    return " ".join(p for p in parts if p)


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
    module = importlib.import_module(BUILDERS[name].module)
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
