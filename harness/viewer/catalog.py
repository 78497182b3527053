"""The runs and audits a viewer shows: found once, under the folders it was given, and named by a short id.

A page or an image is asked for by that id, never by a path, so a request can reach only what was found
here. A folder that cannot be read as a run or an audit is still listed, with the one-line reason.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.errors import HarnessError
from harness.protocols.base import Protocol, get_protocol, protocols
from harness.report.build import find_folders
from harness.results.interval import Interval
from harness.results.metric_key import MetricKey, figures
from harness.results.schema import RunResults, read_run


def folder_id(path: Path) -> str:
    """The id a folder is asked for by: a digest of its resolved path (stable across restarts)."""
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Figure:
    """One task figure as the runs page shows it: its key, value, standard error and interval (any may be
    missing: an unparsed metric has no value, a run written before intervals has none)."""

    key: MetricKey
    value: Any
    stderr: Any
    interval: Interval | None


@dataclass
class Run:
    """A run folder: its results (None when unreadable, with ``problem`` saying why) and its samples files."""

    id: str
    path: Path
    results: RunResults | None
    problem: str | None = None

    @property
    def model(self) -> str:
        """The model spec the run evaluated (the folder name when its results could not be read)."""
        return self.results.config.model if self.results else self.path.name

    @property
    def tasks(self) -> list[str]:
        """The tasks with a samples file, in the results' order; a name that is not one file name (a
        separator, a leading dot) names no file here."""
        if self.results is None:
            return []
        return [task for task in self.results.results if _file_name(task) and self.samples_file(task).is_file()]

    @property
    def started(self) -> str:
        """When the run started (provenance), else the folder's name (a UTC stamp)."""
        started = self.results.provenance.started_at if self.results else None
        return (started or self.path.name)[:19].replace("T", " ")

    def samples_file(self, task: str) -> Path:
        """Where the task's samples are (the name is built here, never read from the run)."""
        return self.path / f"samples_{task}.jsonl"

    def figures(self, task: str) -> list[Figure]:
        """The task's figures with their standard errors and, where the run records one, their interval."""
        if self.results is None:
            return []
        values = self.results.results.get(task, {})
        intervals = run_intervals(self.results).get(task, {})
        return [
            Figure(key, value, values.get(key.stderr.encoded), intervals.get(key.encoded))
            for key, value in figures(values)
        ]


def _file_name(task: str) -> bool:
    return bool(task) and not task.startswith(".") and not any(c in task for c in "/\\\0")


def run_intervals(results: RunResults) -> dict[str, dict[str, Interval]]:
    """results.json's ``intervals`` section ({task: {"metric,filter": Interval}}), typed; empty for runs
    written before it, and an entry that is not an interval is left out (a figure then shows its stderr)."""
    raw = getattr(results, "intervals", None) or (results.model_extra or {}).get("intervals") or {}
    out: dict[str, dict[str, Interval]] = {}
    if not isinstance(raw, dict):
        return out
    for task, by_key in raw.items():
        if not isinstance(by_key, dict):
            continue
        for key, value in by_key.items():
            try:
                out.setdefault(str(task), {})[str(key)] = Interval.model_validate(value)
            except ValidationError:
                continue
    return out


@dataclass
class Audit:
    """An audit folder: its protocol (None when no registered protocol's report reads it) and its files."""

    id: str
    path: Path
    protocol: Protocol | None
    report: Any = None
    problem: str | None = None

    @property
    def name(self) -> str:
        """The protocol's title, or the folder's name."""
        return self.protocol.title if self.protocol else self.path.name

    def files(self) -> list[tuple[str, int]]:
        """The audit's own files (name, size), plain files directly in its folder; links are left out."""
        out = []
        with os.scandir(self.path) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and not entry.name.startswith("."):
                    out.append((entry.name, entry.stat(follow_symlinks=False).st_size))
        return sorted(out)

    def file(self, name: str) -> Path | None:
        """The audit's file of that name, if it is one of :meth:`files` (a request names only a listed file)."""
        return self.path / name if name in {n for n, _ in self.files()} else None


@dataclass
class Catalog:
    """Everything found under the viewer's folders, by id."""

    runs: dict[str, Run] = field(default_factory=dict)
    audits: dict[str, Audit] = field(default_factory=dict)

    def sorted_runs(self) -> list[Run]:
        """The runs, newest first."""
        return sorted(self.runs.values(), key=lambda run: (run.started, run.model), reverse=True)


def discover(folders: list[Path]) -> Catalog:
    """The runs (folders with a results.json) and audits (folders with an audit.json) in or under
    ``folders``, found as ``harness report`` finds them; none at all is a one-line error."""
    catalog = Catalog()
    runs, audits = find_folders(folders)
    for path in runs:
        run = _read_run(path)
        catalog.runs[run.id] = run
    for path in audits:
        audit = _read_audit(path)
        catalog.audits[audit.id] = audit
    if not catalog.runs and not catalog.audits:
        where = ", ".join(map(str, folders))
        raise HarnessError(f"{where}: no run folder (results.json) or audit folder (audit.json) in or under it")
    return catalog


def _read_run(path: Path) -> Run:
    try:
        return Run(folder_id(path), path, read_run(path))
    except HarnessError as exc:
        return Run(folder_id(path), path, None, str(exc))


def _read_audit(path: Path) -> Audit:
    """The audit in ``path``, its protocol told by the folder's name (``audit-<name>-<stamp>``) or, failing
    that, by the first registered report that reads it."""
    named = get_protocol(path.name.split("-")[1]) if path.name.startswith("audit-") and "-" in path.name[6:] else None
    candidates = [named] if named else [p for p in protocols() if p.audit_report is not None]
    problem = None
    for protocol in candidates:
        if protocol.audit_report is None:
            return Audit(folder_id(path), path, protocol)
        try:
            return Audit(folder_id(path), path, protocol, protocol.read_audit(path))
        except HarnessError as exc:
            problem = str(exc)
    return Audit(folder_id(path), path, named, problem=problem or f"{path}: no registered protocol reads this audit")
