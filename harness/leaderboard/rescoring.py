"""Server-side re-scoring: every metric recomputed from the submitted samples with the harness's own
scoring code (``harness.engine.scoring_pass.score_tasks``, the pass behind ``harness score``), then compared
with the numbers the submitter claims (``leaderboard/comparison``) into the checks of ``leaderboard/checks``.

One pass over a parsed :class:`Bundle`: :meth:`Rescoring.plan` takes the server's own copy of each task
(refusing unknown tasks and versions); :meth:`Rescoring.verify` opens each task once (``open_task``, its
dataset loaded once, where the server holds one), checks its requests against it, re-scores its samples
and compares; past the server's budget, :meth:`Rescoring.timed_out` turns the same plan into the claims,
marked unverifiable.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.data import resolve_path
from harness.engine.request_check import RequestCheck, check_requests
from harness.engine.rescore import rescoring_input
from harness.engine.scoring_pass import ScoredTask, TaskScoring, group_results, score_tasks, scoring_order
from harness.engine.tasks import OpenTask, model_family_of, open_task
from harness.errors import HarnessError, TaskConfigError
from harness.leaderboard.bundle import Bundle, SubmissionError
from harness.leaderboard.checks import (
    MISMATCH,
    MODIFIED,
    UNVERIFIABLE,
    VERIFIED,
    Heading,
    Mismatch,
    TaskCheck,
    Verification,
    worst,
)
from harness.leaderboard.comparison import (
    MAX_ERROR_SHARE,
    Findings,
    compare,
    compare_reports,
    coverage,
    dataset_docs,
    samples_differing,
)
from harness.leaderboard.headlines import headlines
from harness.protocols.base import protocol_of_task
from harness.results.schema import RunResults, SampleRecord, TaskCounts
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry

OTHER = "other"


def table_of(task: str, registry: TaskRegistry) -> str:
    """The table a task's figures go to: its protocol's (``Protocol.tasks`` in the registry); a task of no
    protocol goes to a table named for its group (the first by name), else to ``other``."""
    protocol = protocol_of_task(task, registry)
    if protocol is not None:
        return protocol.name
    for group in sorted(registry.groups):
        try:
            if task in registry.expand([group]):
                return group
        except TaskConfigError:  # a group whose tasks are not all installed here
            continue
    return OTHER


def _server_config(registry: TaskRegistry, task: str, claimed_version: Any) -> TaskConfig:
    """The server's own copy of a task, refused when unknown or of another version."""
    try:
        config = registry.get(task)
    except HarnessError:
        raise SubmissionError(f"task {task!r} is not known to this server, so it cannot re-score it") from None
    if str(claimed_version) != str(config.version):
        raise SubmissionError(
            f"task {task}: the run used version {claimed_version!r}, this server scores "
            f"version {str(config.version)!r}; re-run it with the current harness"
        )
    return config


def _check_groups(registry: TaskRegistry, bundle: Bundle) -> None:
    """A group the run claims must carry every task the server's copy of the group has, or its figure
    would be an average over a different set of tasks."""
    for group in bundle.run.group_subtasks:
        if group not in registry.groups:
            continue
        missing = [t for t in registry.expand([group]) if t not in bundle.samples]
        if missing:
            raise SubmissionError(
                f"results.json claims group {group!r} without its task(s) {', '.join(missing)}; "
                "send every task of the group, or drop the group from groups/group_subtasks"
            )


@dataclass(frozen=True)
class _Opened:
    """A task opened once for re-scoring: over the server's dataset where it holds one (``task``), its
    samples' requests checked against it, and its samples ready to score (None: its scoring reads images
    and the server holds no dataset)."""

    task: OpenTask | None
    requests: RequestCheck
    scoring: TaskScoring | None


def _has_dataset(config: TaskConfig, data_dir: Path | None) -> bool:
    """Whether the server holds a local copy of the task's dataset (it never downloads one)."""
    return data_dir is not None and bool(config.dataset_path) and resolve_path(str(config.dataset_path), data_dir)[1]


def _open(config: TaskConfig, bundle: Bundle, family: str | None, data_dir: Path | None) -> _Opened:
    """``config``'s task opened once (with its dataset when the server holds it), its samples' requests
    checked and its samples made ready to score, with the same opened task."""
    task, records = config.task, bundle.samples[config.task]
    try:
        opened = open_task(config, family, data_dir) if _has_dataset(config, data_dir) else None
        requests = check_requests(config, records, bundle.run, opened)
    except Exception as exc:  # the submitted samples broke the task's code
        raise SubmissionError(
            f"task {task}: the samples' requests cannot be rebuilt ({type(exc).__name__}: {exc})"
        ) from None
    try:
        scoring = _scoring(config, family, records, opened)
    except Exception as exc:  # the task's code cannot be opened for these samples
        raise SubmissionError(f"task {task}: the samples cannot be scored ({type(exc).__name__}: {exc})") from None
    return _Opened(opened, requests, scoring)


def _scoring(
    config: TaskConfig, family: str | None, records: list[SampleRecord], opened: OpenTask | None
) -> TaskScoring | None:
    """The samples ready to score with the task already opened (the dataset's docs where its scoring reads
    images, else the samples' own); without the dataset, None for a task whose scoring reads images."""
    if opened is not None:
        images = config.process_results_use_image
        return TaskScoring(opened.scorer, records, [opened.docs[r.doc_id] if images else r.doc for r in records])
    return None if config.process_results_use_image else rescoring_input(config, family, records, None)


def _unscorable_check(heading: Heading, requests: RequestCheck) -> TaskCheck:
    """A task whose scoring reads images, without the server's copy of its dataset: its requests checked,
    its figures not re-scorable."""
    if requests.modified:
        return heading.check(MODIFIED, f"requests differ from this server's task (first: {requests.first})")
    return heading.check(UNVERIFIABLE, "not re-scorable without the dataset: its scoring reads images")


def _rescored_check(
    heading: Heading,
    run: RunResults,
    scoring: TaskScoring,
    out: ScoredTask,
    opened: _Opened,
    plots: Path,
    tolerance: float,
    share: float,
) -> tuple[dict[str, Any] | None, TaskCheck]:
    """A re-scored task's report (its plots drawn in ``plots``) and its check against the claims."""
    task, records = heading.task, scoring.records
    try:
        report = scoring.scorer.report(out.records, plots)
        docs = dataset_docs(opened.task.docs, records) if opened.task is not None else None
    except Exception as exc:  # the submitted samples broke the task's code
        raise SubmissionError(f"task {task}: the samples cannot be scored ({type(exc).__name__}: {exc})") from None
    mismatches = compare(run.results[task], out.results, tolerance) + compare_reports(
        run.reports.get(task), report, tolerance
    )
    if run.counts[task].model_dump() != out.counts.model_dump():
        mismatches.append(Mismatch("counts", run.counts[task].model_dump(), out.counts.model_dump()))
    size = None if docs is None else docs[1]
    found = Findings(
        requests=opened.requests,
        mismatches=tuple(mismatches),
        samples_differing=samples_differing(records, out.records, tolerance),
        bad_docs=None if docs is None else docs[0],
        coverage=coverage(records, out.counts, run.n_samples.get(task), run.config.limit, size),
    )
    return report, found.check(heading, share)


def _group_message(state: str, mismatches: list[Mismatch], members: list[TaskCheck]) -> str:
    """Why a group is not verified: its own differing figures, else the member tasks that set its state."""
    if mismatches:
        return f"{len(mismatches)} claimed group figure(s) differ"
    if state == VERIFIED:
        return ""
    return "as its task(s) " + "; ".join(f"{m.task} ({m.message or m.status})" for m in members if m.status == state)


def _group_checks(
    run: RunResults, groups: dict[str, dict[str, Any]], checks: dict[str, TaskCheck], tolerance: float
) -> dict[str, TaskCheck]:
    """Each claimed group's check: its own figures compared, its state the worst of its re-scored members'."""
    out = {}
    for group, values in groups.items():
        members = [checks[m] for m in run.group_subtasks.get(group, []) if m in checks]
        if members and group in run.groups and all(m.status != UNVERIFIABLE for m in members):
            mismatches = compare(run.groups[group], values, tolerance)
            state = MISMATCH if mismatches else worst({m.status for m in members} - {MISMATCH})
            heading = Heading(group, members[0].protocol, "group")
            out[group] = heading.check(
                state,
                _group_message(state, mismatches, members),
                mismatches=tuple(mismatches),
                docs_checked=all(m.docs_checked for m in members),
            )
    return out


@dataclass(frozen=True)
class _Rescored:
    """What re-scoring the tasks of a submission gave, task by task, before its groups."""

    results: dict[str, dict[str, Any]]
    counts: dict[str, TaskCounts]
    reports: dict[str, dict[str, Any]]
    checks: dict[str, TaskCheck]
    plots: dict[str, bytes]


@dataclass(frozen=True)
class Rescoring:
    """A submission planned for re-scoring: the server's own copy of each of its tasks, by task."""

    bundle: Bundle
    registry: TaskRegistry
    configs: dict[str, TaskConfig]

    @classmethod
    def plan(cls, bundle: Bundle, registry: TaskRegistry) -> Rescoring:
        """Each task of ``bundle`` in the server's copy; unknown tasks or task versions are refused (the
        server would not be running the code that scored them), as is a group claimed without its tasks."""
        run = bundle.run
        configs = {task: _server_config(registry, task, run.versions.get(task)) for task in bundle.samples}
        _check_groups(registry, bundle)
        return cls(bundle, registry, configs)

    def heading(self, task: str) -> Heading:
        """The heading of ``task``'s check: its table and the server's version of it."""
        return Heading(task, table_of(task, self.registry), str(self.configs[task].version))

    @property
    def higher_is_better(self) -> dict[str, dict[str, bool]]:
        """Per task, whether each of its metrics is better higher (the server's copy of the task says)."""
        return {t: {m.metric: m.higher_is_better for m in c.metric_list} for t, c in self.configs.items()}

    def timed_out(self, budget_s: float) -> Verification:
        """The claims of a submission whose re-scoring ran past the server's budget: every task shown with its
        claimed values, marked ``unverifiable (timeout)``, never as verified."""
        run = self.bundle.run
        message = f"unverifiable (timeout): re-scoring ran past this server's {budget_s:g} s budget"
        return Verification(
            results={t: run.results[t] for t in self.configs},
            counts={t: run.counts[t] for t in self.configs},
            groups={},
            reports={},
            checks={t: self.heading(t).check(UNVERIFIABLE, message) for t in self.configs},
            higher_is_better=self.higher_is_better,
        )

    def verify(
        self, data_dir: Path | None = None, tolerance: float = 1e-9, max_error_share: float = MAX_ERROR_SHARE
    ) -> Verification:
        """Re-score every task (each opened once, over ``data_dir`` where the server holds its dataset) and
        compare with its claims."""
        run = self.bundle.run
        family = model_family_of(run)
        opened = {task: _open(config, self.bundle, family, data_dir) for task, config in self.configs.items()}
        inputs = {task: o.scoring for task, o in opened.items() if o.scoring is not None}
        try:
            scored, _ = score_tasks(inputs, scoring_order(self.registry, run.config.tasks, list(inputs)))
        except Exception as exc:  # the submitted samples broke a task's aggregation
            raise SubmissionError(f"the samples cannot be scored ({type(exc).__name__}: {exc})") from None
        tasks = self._compared(opened, scored, tolerance, max_error_share)
        claimed_groups = [g for g in run.group_subtasks if g in self.registry.groups]
        groups, _ = group_results(self.registry, claimed_groups, tasks.results, tasks.counts)
        samples = {task: out.records for task, out in scored.items()}
        board = headlines(self.bundle, tasks.checks, tasks.results, tasks.reports, samples)
        return Verification(
            results=tasks.results,
            counts=tasks.counts,
            groups=groups,
            reports=tasks.reports,
            checks={**tasks.checks, **_group_checks(run, groups, tasks.checks, tolerance)},
            higher_is_better=self.higher_is_better,
            plots=tasks.plots,
            headlines=board,
        )

    def _compared(
        self, opened: dict[str, _Opened], scored: dict[str, ScoredTask], tolerance: float, share: float
    ) -> _Rescored:
        """Each task's figures (re-scored, else claimed), report and check; the reports' plots drawn."""
        run = self.bundle.run
        out = _Rescored({}, {}, {}, {}, {})
        with tempfile.TemporaryDirectory(prefix="leaderboard-report-") as tmp:
            for task in self.configs:
                heading, scoring = self.heading(task), opened[task].scoring
                if scoring is None:
                    out.results[task], out.counts[task] = run.results[task], run.counts[task]
                    out.checks[task] = _unscorable_check(heading, opened[task].requests)
                    continue
                done = scored[task]
                out.results[task], out.counts[task] = done.results, done.counts
                report, out.checks[task] = _rescored_check(
                    heading, run, scoring, done, opened[task], Path(tmp), tolerance, share
                )
                if report is not None:
                    out.reports[task] = report
            out.plots.update({p.name: p.read_bytes() for p in sorted(Path(tmp).glob("*.png"))})
        return out


def verify(
    bundle: Bundle,
    registry: TaskRegistry,
    data_dir: Path | None = None,
    tolerance: float = 1e-9,
    max_error_share: float = MAX_ERROR_SHARE,
) -> Verification:
    """Plan and re-score ``bundle`` against ``registry``'s copies of its tasks (:class:`Rescoring`)."""
    return Rescoring.plan(bundle, registry).verify(data_dir, tolerance, max_error_share)
