"""Discover tasks, groups and tags in task folders (the bundled ``tasks/`` plus ``--include-path``)."""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import TaskConfigError
from harness.taskspec.config import AggregateMetric, TaskConfig
from harness.taskspec.names import name_problem
from harness.taskspec.yaml_loader import load_yaml_config

log = logging.getLogger(__name__)

#: What a task or group of an include path that has a bundled one's name does: ``warn`` (one line; the
#: include path's version is used, as in lmms-eval) or ``error`` (the leaderboard: bundled tasks are scored
#: with the bundled code only).
Shadowing = Literal["warn", "error"]
_TOP_LEVEL_NAME = re.compile(r"^(?:task|group):[ \t]*['\"]?([^\s'\"#\[{]+)", re.MULTILINE)
_warned: set[tuple[str, str]] = set()  # (name, file) shadow warnings already given in this process


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
    _broken_names: dict[str, str] = field(default_factory=dict)  # name a broken file defines -> its error

    @classmethod
    def discover(cls, include_paths: Sequence[str | Path] | None = None, shadowing: Shadowing = "warn") -> TaskRegistry:
        """Every task, group and tag in the bundled ``tasks/`` and the ``include_paths`` folders; a task or
        group of an include path named like a bundled one is a one-line warning, or with
        ``shadowing="error"`` refused."""
        paths = [bundled_tasks_dir(), *(Path(p) for p in include_paths or [])]
        for p in paths:
            if not p.is_dir():
                raise TaskConfigError(f"--include-path {p}: not a folder")
        registry = cls(paths=paths)
        for yaml_file in sorted(paths[0].rglob("*.yaml")):
            registry._scan(yaml_file)
        bundled = {**registry._task_files, **{g: s.source for g, s in registry._groups.items()}}
        for root in paths[1:]:
            for yaml_file in sorted(root.rglob("*.yaml")):
                registry._scan(yaml_file)
        for name, source in bundled.items():
            now = registry._task_files.get(name) or (
                registry._groups[name].source if name in registry._groups else source
            )
            if now.resolve() != source.resolve():
                registry._shadowed(name, now, source, shadowing)
        return registry

    @staticmethod
    def _shadowed(name: str, path: Path, bundled: Path, shadowing: Shadowing) -> None:
        if shadowing == "error":
            raise TaskConfigError(
                f"{path}: task {name!r} has the name of a bundled task ({bundled}); bundled tasks "
                "are scored with their bundled code only: rename it, or drop that include path"
            )
        if (name, str(path)) not in _warned:
            _warned.add((name, str(path)))
            log.warning(
                "%s: task %r shadows the bundled task of that name (%s); the include path's version is used",
                path,
                name,
                bundled,
            )

    def _scan(self, path: Path) -> None:
        try:
            raw = load_yaml_config(path)
            self._add(raw, path)
        except TaskConfigError as exc:
            self.broken.append(str(exc))
            for name in _defined_names(path):
                self._broken_names.setdefault(name, str(exc))

    def _add(self, raw: dict[str, Any], path: Path) -> None:
        """Register one file's task or group (its names checked first, so a bad name registers nothing)."""
        task = raw.get("task")
        group = raw.get("group")
        if isinstance(task, list) and isinstance(group, str):
            _check_name("group", group, path)
            members = tuple(t if isinstance(t, str) else str(t.get("task")) for t in task)
            for member in members:
                _check_name("group member", member, path)
            aggregates = AggregateMetric.parse(raw.get("aggregate_metric_list"), str(path))
            self._groups[group] = GroupSpec(group, members, path, aggregates)
        elif isinstance(task, str):
            tags = raw.get("tag") or []
            legacy_group = raw.get("group")  # old schema: group on a task acts as a tag
            labels = ([tags] if isinstance(tags, str) else list(tags)) + (
                [legacy_group] if isinstance(legacy_group, str) else []
            )
            _check_name("task", task, path)
            for tag in labels:
                _check_name("tag", tag, path)
            self._task_files[task] = path  # later folders override bundled tasks, as in lmms-eval
            for tag in labels:
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
        """The error for a name no readable file defines: the defining file's own error when a file that
        cannot be read defines it, else close matches."""
        if name in self._broken_names:
            return TaskConfigError(f"task {name!r} cannot be loaded: {self._broken_names[name]}")
        known = [*self._task_files, *self._groups, *self._tags]
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `harness tasks` lists them"
        broken = (
            f" ({len(self.broken)} other task file(s) could not be read; `harness tasks` names them)"
            if self.broken
            else ""
        )
        return TaskConfigError(f"unknown task {name!r}{hint}{broken}")


def _check_name(kind: str, name: object, path: Path) -> None:
    problem = name_problem(kind, name)
    if problem is not None:
        raise TaskConfigError(f"{path}: {problem}")


def _defined_names(path: Path) -> list[str]:
    """The task or group names a file that cannot be loaded seems to define (its top-level ``task:`` and
    ``group:`` lines), so asking for one of them shows that file's error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return _TOP_LEVEL_NAME.findall(text)
