"""Discover tasks, groups and tags in task folders (the bundled ``tasks/`` plus ``--include-path``)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import TaskConfigError
from harness.taskspec.config import AggregateMetric, TaskConfig
from harness.taskspec.yaml_loader import load_yaml_config


@dataclass(frozen=True)
class GroupSpec:
    """A ``group`` YAML: member tasks (or groups) and how to aggregate their metrics."""

    group: str
    tasks: tuple[str, ...]
    source: Path
    aggregate_metric_list: tuple[AggregateMetric, ...] = ()


def bundled_tasks_dir() -> Path:
    """The project's ``tasks/`` folder: from a source checkout, or the copy shipped in the wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "tasks", here / "_bundled" / "tasks"):
        if candidate.is_dir():
            return candidate
    raise TaskConfigError("the bundled tasks/ folder is missing from this installation")


@dataclass
class TaskRegistry:
    """Every task, group and tag found under some folders; lookups fail with close matches."""

    paths: list[Path]
    _task_files: dict[str, Path] = field(default_factory=dict)
    _groups: dict[str, GroupSpec] = field(default_factory=dict)
    _tags: dict[str, list[str]] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)
    _loaded: dict[str, TaskConfig] = field(default_factory=dict)

    @classmethod
    def discover(cls, include_paths: Sequence[str | Path] | None = None) -> TaskRegistry:
        """Every task, group and tag in the bundled ``tasks/`` and the ``include_paths`` folders."""
        paths = [bundled_tasks_dir(), *(Path(p) for p in include_paths or [])]
        for p in paths:
            if not p.is_dir():
                raise TaskConfigError(f"--include-path {p}: not a folder")
        registry = cls(paths=paths)
        for root in paths:
            for yaml_file in sorted(root.rglob("*.yaml")):
                registry._scan(yaml_file)
        return registry

    def _scan(self, path: Path) -> None:
        try:
            raw = load_yaml_config(path)
        except TaskConfigError as exc:
            self.broken.append(str(exc))
            return
        task = raw.get("task")
        group = raw.get("group")
        if isinstance(task, list) and isinstance(group, str):
            members = tuple(t if isinstance(t, str) else str(t.get("task")) for t in task)
            try:
                aggregates = AggregateMetric.parse(raw.get("aggregate_metric_list"), str(path))
            except TaskConfigError as exc:
                self.broken.append(str(exc))
                return
            self._groups[group] = GroupSpec(group, members, path, aggregates)
        elif isinstance(task, str):
            self._task_files[task] = path  # later folders override bundled tasks, as in lmms-eval
            tags = raw.get("tag") or []
            legacy_group = raw.get("group")  # old schema: group on a task acts as a tag
            for tag in ([tags] if isinstance(tags, str) else list(tags)) + (
                [legacy_group] if isinstance(legacy_group, str) else []
            ):
                self._tags.setdefault(str(tag), []).append(task)

    @property
    def tasks(self) -> list[str]:
        """Every task name, sorted."""
        return sorted(self._task_files)

    @property
    def groups(self) -> dict[str, GroupSpec]:
        """Group name -> its spec."""
        return dict(self._groups)

    @property
    def tags(self) -> dict[str, list[str]]:
        """Tag name -> its tasks, sorted."""
        return {k: sorted(v) for k, v in self._tags.items()}

    def expand(self, names: list[str]) -> list[str]:
        """Task names for a list of task, group or tag names, in order, without repeats."""
        out: list[str] = []
        for name in names:
            for task in self._expand_one(name, ()):
                if task not in out:
                    out.append(task)
        return out

    def _expand_one(self, name: str, stack: tuple[str, ...]) -> list[str]:
        if name in stack:
            raise TaskConfigError(f"group cycle: {' -> '.join((*stack, name))}")
        if name in self._task_files:
            return [name]
        if name in self._groups:
            return [t for m in self._groups[name].tasks for t in self._expand_one(m, (*stack, name))]
        if name in self._tags:
            return sorted(self._tags[name])
        raise self._unknown(name)

    def get(self, name: str) -> TaskConfig:
        """The full, validated config of one task."""
        if name not in self._loaded:
            path = self._task_files.get(name)
            if path is None:
                raise self._unknown(name)
            self._loaded[name] = TaskConfig.from_dict(load_yaml_config(path), path)
        return self._loaded[name]

    def _unknown(self, name: str) -> TaskConfigError:
        known = [*self._task_files, *self._groups, *self._tags]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `harness tasks` lists them"
        broken = f" ({len(self.broken)} task file(s) could not be read: {self.broken[0]})" if self.broken else ""
        return TaskConfigError(f"unknown task {name!r}{hint}{broken}")
