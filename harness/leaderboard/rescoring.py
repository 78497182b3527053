"""Server-side re-scoring: every metric recomputed from the submitted samples with the harness's own
scoring code (``harness.engine.runner.rescore_task``, the code behind ``harness score``), then compared
with the numbers the submitter claims.

Per task the outcome is one of:

- ``verified``: the recomputed task values, counts and per-sample metrics equal the claimed ones;
- ``mismatch``: some claimed number differs (listed), or, when the server holds the dataset, a sample's
  doc differs from the dataset's doc of the same id;
- ``unverifiable``: the task's scoring reads images (``process_results_use_image``) and the server has
  no copy of its dataset; the claimed values are kept and shown as not re-scored, never as verified.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data import load_task_dataset, resolve_path
from harness.engine.runner import group_results, rescore_task
from harness.engine.task_runtime import strip_images
from harness.engine.tasks import model_family_of
from harness.errors import HarnessError
from harness.hashing import stable_hash, to_jsonable
from harness.leaderboard.bundle import Bundle, SubmissionError
from harness.results.schema import SampleRecord, TaskCounts
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry

VERIFIED, MISMATCH, UNVERIFIABLE = "verified", "mismatch", "unverifiable"


@dataclass(frozen=True)
class TaskCheck:
    """How one task of a submission fared against the server's re-scoring."""

    task: str
    protocol: str
    version: str
    status: str
    message: str = ""
    mismatches: tuple[dict[str, Any], ...] = ()
    samples_differing: int = 0
    docs_checked: bool = False


@dataclass(frozen=True)
class Verification:
    """The server's figures for a submission (recomputed where possible) and the per-task checks."""

    results: dict[str, dict[str, Any]]
    counts: dict[str, TaskCounts]
    groups: dict[str, dict[str, Any]]
    reports: dict[str, dict[str, Any]]
    checks: dict[str, TaskCheck]
    higher_is_better: dict[str, dict[str, bool]]
    plots: dict[str, bytes] = field(repr=False, default_factory=dict)

    @property
    def status(self) -> str:
        """``flagged`` when any task mismatches, else ``unverifiable`` when any could not be re-scored."""
        states = {c.status for c in self.checks.values()}
        return "flagged" if MISMATCH in states else UNVERIFIABLE if UNVERIFIABLE in states else VERIFIED


def protocol_of(config: TaskConfig) -> str:
    """A task's protocol: the name of the task folder its YAML lives in (``tasks/stealth/...`` -> stealth)."""
    return config.source.parent.name


def _same(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, tolerance) for x, y in zip(a, b, strict=True))
    return a == b


def _compare(claimed: dict[str, Any], recomputed: dict[str, Any], tolerance: float) -> list[dict[str, Any]]:
    keys = sorted((set(claimed) | set(recomputed)) - {"alias"})
    return [{"metric": k, "claimed": claimed.get(k), "recomputed": recomputed.get(k)}
            for k in keys if not _same(claimed.get(k), recomputed.get(k), tolerance)]


def _docs_differing(config: TaskConfig, family: str | None, records: list[SampleRecord],
                    data_dir: Path | None) -> int | None:
    """How many samples carry a doc other than the dataset's doc of that id; None without the dataset."""
    if not _has_dataset(config, data_dir):
        return None
    from harness.engine.task_runtime import TaskRuntime

    docs = TaskRuntime(config, family).process_docs(load_task_dataset(config, data_dir).docs)
    differing = 0
    for record in records:
        if record.doc_hash == "" and record.error is not None:
            continue  # a row the run could not decode carries no doc
        if not 0 <= record.doc_id < len(docs):
            differing += 1
            continue
        doc = docs[record.doc_id]
        if stable_hash(doc) != record.doc_hash or to_jsonable(strip_images(doc)) != record.doc:
            differing += 1
    return differing


def _check(base: dict[str, str], claimed: dict[str, Any], claimed_counts: TaskCounts, records: list[SampleRecord],
           rescored: list[SampleRecord], recomputed: dict[str, Any], counts: TaskCounts, bad_docs: int | None,
           tolerance: float) -> TaskCheck:
    """Compare a task's claims (figures, counts, per-sample metrics, docs) with the server's re-scoring."""
    mismatches = _compare(claimed, recomputed, tolerance)
    if claimed_counts.model_dump() != counts.model_dump():
        mismatches.append({"metric": "counts", "claimed": claimed_counts.model_dump(),
                           "recomputed": counts.model_dump()})
    differing = sum(not _same(a.metrics, b.metrics, tolerance) or a.unparsed != b.unparsed
                    for a, b in zip(records, rescored, strict=True))
    problems = []
    if mismatches:
        problems.append(f"{len(mismatches)} claimed figure(s) differ from the re-scored samples")
    if differing:
        problems.append(f"{differing} sample(s) carry per-sample metrics that differ")
    if bad_docs:
        problems.append(f"{bad_docs} sample doc(s) differ from the dataset")
    return TaskCheck(**base, status=MISMATCH if problems else VERIFIED, message="; ".join(problems),
                     mismatches=tuple(mismatches), samples_differing=differing, docs_checked=bad_docs is not None)


def _server_config(registry: TaskRegistry, task: str, claimed_version: Any) -> TaskConfig:
    """The server's own copy of a task, refused when unknown or of another version."""
    try:
        config = registry.get(task)
    except HarnessError:
        raise SubmissionError(f"task {task!r} is not known to this server, so it cannot re-score it") from None
    if str(claimed_version) != str(config.version):
        raise SubmissionError(f"task {task}: the run used version {claimed_version!r}, this server scores "
                              f"version {str(config.version)!r}; re-run it with the current harness")
    return config


def timed_out(bundle: Bundle, registry: TaskRegistry, budget_s: float) -> Verification:
    """The claims of a submission whose re-scoring ran past the server's budget: every task shown with its
    claimed values, marked ``unverifiable (timeout)``, never as verified."""
    run = bundle.run
    checks, higher = {}, {}
    for task in bundle.samples:
        config = _server_config(registry, task, run.versions.get(task))
        higher[task] = {m.metric: m.higher_is_better for m in config.metric_list}
        checks[task] = TaskCheck(task=task, protocol=protocol_of(config), version=str(config.version),
                                 status=UNVERIFIABLE, message=f"unverifiable (timeout): re-scoring ran past "
                                                              f"this server's {budget_s:g} s budget")
    return Verification(results={t: run.results[t] for t in bundle.samples},
                        counts={t: run.counts[t] for t in bundle.samples}, groups={}, reports={}, checks=checks,
                        higher_is_better=higher)


def _check_groups(registry: TaskRegistry, bundle: Bundle) -> None:
    """A group the run claims must carry every task the server's copy of the group has, or its figure
    would be an average over a different set of tasks."""
    for group in bundle.run.group_subtasks:
        if group not in registry.groups:
            continue
        missing = [t for t in registry.expand([group]) if t not in bundle.samples]
        if missing:
            raise SubmissionError(f"results.json claims group {group!r} without its task(s) {', '.join(missing)}; "
                                  "send every task of the group, or drop the group from groups/group_subtasks")


def verify(bundle: Bundle, registry: TaskRegistry, data_dir: Path | None = None,
           tolerance: float = 1e-9) -> Verification:
    """Re-score every task of ``bundle`` and compare with its claims; unknown tasks or task versions
    are refused (the server would not be running the code that scored them)."""
    run = bundle.run
    configs = {task: _server_config(registry, task, run.versions.get(task)) for task in bundle.samples}
    _check_groups(registry, bundle)
    family = model_family_of(run)
    results: dict[str, dict[str, Any]] = {}
    counts: dict[str, TaskCounts] = {}
    reports: dict[str, dict[str, Any]] = {}
    checks: dict[str, TaskCheck] = {}
    higher: dict[str, dict[str, bool]] = {}
    with tempfile.TemporaryDirectory(prefix="leaderboard-report-") as tmp:
        for task, records in bundle.samples.items():
            config = configs[task]
            higher[task] = {m.metric: m.higher_is_better for m in config.metric_list}
            base: dict[str, Any] = {"task": task, "protocol": protocol_of(config), "version": str(config.version)}
            if config.process_results_use_image and not _has_dataset(config, data_dir):
                results[task], counts[task] = run.results[task], run.counts[task]
                checks[task] = TaskCheck(**base, status=UNVERIFIABLE,
                                         message="not re-scorable without the dataset: its scoring reads images")
                continue
            try:
                runtime, rescored, results[task], counts[task] = rescore_task(config, family, records, data_dir)
                report = runtime.report(rescored, Path(tmp))
                bad_docs = _docs_differing(config, family, records, data_dir)
            except Exception as exc:  # the submitted samples broke the task's code
                raise SubmissionError(f"task {task}: the samples cannot be scored "
                                      f"({type(exc).__name__}: {exc})") from None
            if report is not None:
                reports[task] = report
            checks[task] = _check(base, run.results[task], run.counts[task], records, rescored, results[task],
                                  counts[task], bad_docs, tolerance)
        plots = {p.name: p.read_bytes() for p in sorted(Path(tmp).glob("*.png"))}
    groups, _ = group_results(registry, [g for g in run.group_subtasks if g in registry.groups], results, counts)
    for group, values in groups.items():
        members = [checks[m] for m in run.group_subtasks.get(group, []) if m in checks]
        if members and group in run.groups and all(m.status != UNVERIFIABLE for m in members):
            mismatches = _compare(run.groups[group], values, tolerance)
            checks[group] = TaskCheck(
                task=group, protocol=members[0].protocol, version="group", status=MISMATCH if mismatches else VERIFIED,
                message=f"{len(mismatches)} claimed group figure(s) differ" if mismatches else "",
                mismatches=tuple(mismatches))
    return Verification(results=results, counts=counts, groups=groups, reports=reports, checks=checks,
                        higher_is_better=higher, plots=plots)


def _has_dataset(config: TaskConfig, data_dir: Path | None) -> bool:
    """Whether the server holds a local copy of the task's dataset (it never downloads one)."""
    return data_dir is not None and bool(config.dataset_path) and resolve_path(str(config.dataset_path), data_dir)[1]
