"""``harness tasks``: every task with its description and whether its dataset is local, then groups and tags."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.arguments import data_dir
from harness.errors import HarnessError
from harness.protocols.base import check_audit_tag


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness tasks``: the task search paths and the data dir to look datasets up in."""
    ts = sub.add_parser(
        "tasks", parents=[common], help="list tasks (description, dataset, whether it is local), groups and tags"
    )
    ts.add_argument("--include-path", action="append", help="extra task folder (repeatable)")
    ts.add_argument("--data-dir", help="where local dataset copies are (default: the data dir)")
    ts.set_defaults(func=list_tasks)


def _yaml_description(path: Path) -> str:
    """A task's description: the comment lines at the top of its YAML file (its docstring)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines) or "(no description: start the task's YAML with a # comment line)"


def list_tasks(args: argparse.Namespace) -> int:
    """Prints every task with its description and dataset state (local, buildable or Hub), then the groups,
    the tags and, on stderr, the tasks that cannot be loaded."""
    from builders import build_command, builder_for
    from harness.data import local_splits, missing_split, resolve_path
    from harness.display import visible
    from harness.taskspec.registry import TaskRegistry

    registry = TaskRegistry.discover(args.include_path or [])
    folder = data_dir(args)
    print(f"Tasks (datasets looked up in {folder}):")
    width = max((len(name) for name in registry.tasks), default=0)
    for name in registry.tasks:
        try:
            config = registry.get(name)
            check_audit_tag(config)
        except HarnessError as exc:
            print(f"warning: {visible(str(exc))}", file=sys.stderr)
            continue
        path, local = resolve_path(config.dataset_path or "", folder)
        builder = builder_for(config.dataset_path) if config.dataset_path else None
        build = f"build: {build_command(builder)}" if builder else "read from the Hub"
        split = config.test_split or "test"
        splits = local_splits(Path(path), config.dataset_name) if local else None
        state = (
            f"not local ({build})"
            if not local
            else missing_split(split, path, splits, build)
            if splits is not None and split not in splits
            else f"local ({path})"
        )
        print(f"  {name:<{width}}  {visible(_yaml_description(config.source))}")
        print(f"  {'':<{width}}  dataset {visible(f'{config.dataset_path}: {state}')}")
    if registry.groups:
        print("Groups:")
        for name, spec in sorted(registry.groups.items()):
            print(f"  {name}: {', '.join(spec.tasks)}")
    if registry.tags:
        print("Tags:")
        for name, members in sorted(registry.tags.items()):
            print(f"  {name}: {', '.join(members)}")
    for problem in registry.broken:
        print(f"warning: {visible(problem)}", file=sys.stderr)
    return 0
