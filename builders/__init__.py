"""Dataset builders: ``harness build NAME`` writes a Hub-layout dataset folder with its card.

A builder is a module with ``REPO_ID`` (the dataset it makes), ``Options`` (a frozen dataclass of its
options, see :mod:`builders.options`) and ``build(out, options) -> Path``
(:class:`harness.builder_spec.BuilderModule`). ``shapes`` is built in; every
other builder is declared by its protocol (``Protocol.builders``), a third party's included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.builder_spec import Builder
from harness.errors import HarnessError

SHAPES = Builder("shapes", "builders.shapes", "synthetic colored shapes for offline demos and tests")


def all_builders() -> list[Builder]:
    """The built-in shapes builder, then every registered protocol's builders."""
    from harness.protocols.base import protocols

    return [SHAPES, *(b for protocol in protocols() for b in protocol.builders)]


def find_builder(name: str) -> Builder | None:
    """The builder called ``name`` or one of its aliases, else None."""
    return next((b for b in all_builders() if name == b.name or name in b.aliases), None)


def builders_help() -> str:
    """One line per builder (name, what it builds, its extra) for ``harness build --help``."""
    lines = []
    for b in all_builders():
        also = f" (also: {', '.join(b.aliases)})" if b.aliases else ""
        lines.append(f"  {b.name:<12} {b.description}" + (f" [extra: {b.extra}]" if b.extra else "") + also)
    return "\n".join(lines)


def builder_for(dataset_path: str) -> str | None:
    """The builder whose dataset is ``dataset_path`` (a Hub id such as vlm-audit/vista), if any."""
    return next((b.name for b in all_builders() if dataset_path == b.load().REPO_ID), None)


def build_hint(dataset_path: str, out: Path | None) -> str | None:
    """The ``harness build`` command that makes ``dataset_path`` (into ``out`` when not the default), or None
    when no builder makes it: the hint a missing-dataset error gives (:data:`harness.data.BuildHint`)."""
    name = builder_for(dataset_path)
    return build_command(name, out) if name else None


def build_command(name: str, out: Path | None = None) -> str:
    """The ``harness build`` command line that makes dataset ``name`` (into ``out`` when not the default)."""
    builder = find_builder(name)
    parts = ["harness build", name, builder.inputs if builder else "", f"--output {out}" if out else ""]
    return " ".join(p for p in parts if p)


def build_dataset(
    name: str, out: Path | None, seed: int | None = None, push_to_hub: str | None = None, **options: Any
) -> Path:
    """Build dataset ``name`` into ``out`` (default: the data dir, where ``harness eval`` looks); ``options``
    are the builder's own (its ``Options`` fields; ``seed`` left out keeps the builder's default)."""
    from builders.options import make_options

    builder = find_builder(name)
    if builder is None:
        raise HarnessError(f"unknown dataset {name!r}; builders: {', '.join(sorted(b.name for b in all_builders()))}")
    module = builder.load()
    if seed is not None:
        options["seed"] = seed
    chosen = make_options(builder.name, module.Options, options)
    if out is None:
        from harness.data import default_data_dir

        out = default_data_dir() / module.REPO_ID
    folder = module.build(out, chosen)
    from builders.benchmark import write_benchmark_spec
    from harness.protocols.base import protocols

    title = next((p.title for p in protocols() if builder in p.builders), builder.name)
    write_benchmark_spec(folder, module.REPO_ID, title, builder.description)
    if push_to_hub:
        from builders.publish import push_folder

        push_folder(folder, push_to_hub)
    return folder
