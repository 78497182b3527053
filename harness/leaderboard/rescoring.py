"""Server-side re-scoring: every metric recomputed from the submitted samples with the harness's own
scoring code (``harness.engine.scoring_pass.score_tasks``, the pass behind ``harness score``), then compared
with the numbers the submitter claims.

Per task the outcome is one of:

- ``verified``: the recomputed task values, task report, counts and per-sample metrics equal the claimed
  ones, every sample's doc equals the server's copy of the dataset, and the samples cover the whole task;
- ``rescored``: as verified, but the server holds no copy of the dataset, so neither the docs nor the
  task's full size could be checked (coverage is then checked against the claimed ``n-samples``);
- ``partial``: the samples cover only part of the task (deleted samples, or a run cut by ``--limit``),
  or more than ``max_error_share`` of them are errors: a cherry-picked run is never verified;
- ``mismatch``: some claimed number differs (listed), or a sample's doc differs from the dataset's;
- ``modified``: some sample's request is not the one the server's copy of the task builds (another
  prompt text or image, other generation settings, another ``n`` or seed; the first differing field is
  shown): the run answered another task, so its figures are never verified (``engine/request_check``);
- ``unverifiable``: the task's scoring reads images (``process_results_use_image``) and the server has
  no copy of its dataset; the claimed values are kept and shown as not re-scored, never as verified.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.data import resolve_path
from harness.engine.baseline import BASELINE_KEYS
from harness.engine.request_check import RequestCheck, check_requests
from harness.engine.rescore import rescoring_input
from harness.engine.scoring_pass import ScoredTask, TaskScoring, group_results, score_tasks, scoring_order
from harness.engine.task_prompts import strip_images
from harness.engine.task_scoring import TaskScorer
from harness.engine.tasks import OpenTask, model_family_of, open_task
from harness.errors import HarnessError, TaskConfigError
from harness.hashing import stable_hash, to_jsonable
from harness.leaderboard.bundle import Bundle, SubmissionError
from harness.leaderboard.hooks import board_protocols
from harness.protocols.base import protocol_of_task
from harness.protocols.leaderboard_hooks import Evidence
from harness.results.schema import SampleRecord, TaskCounts
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry

VERIFIED, RESCORED, PARTIAL, MISMATCH, UNVERIFIABLE = "verified", "rescored", "partial", "mismatch", "unverifiable"
MODIFIED, FLAGGED = "modified", "flagged"
SEVERITY = (MODIFIED, MISMATCH, UNVERIFIABLE, PARTIAL, RESCORED, VERIFIED)  # a submission's status: its worst task's
MAX_ERROR_SHARE = 0.05  # more errored samples than this share make a task partial


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
    docs_expected: int | None = None  # the task's docs: the dataset's count, else the claimed n-samples
    docs_covered: int = 0  # distinct doc ids of the samples among them
    errors: int = 0


def worst(states: set[str]) -> str:
    """The most severe of some task states (``verified`` for none)."""
    return next((s for s in SEVERITY if s in states), VERIFIED)


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
    headlines: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # protocol -> figure -> estimate

    @property
    def status(self) -> str:
        """``modified`` when any task's requests are not the server's, ``flagged`` when any task mismatches,
        else the worst task state (unverifiable, partial, rescored, verified)."""
        state = worst({c.status for c in self.checks.values()})
        return FLAGGED if state == MISMATCH else state


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


def _same(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, tolerance) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _compare(claimed: dict[str, Any], recomputed: dict[str, Any], tolerance: float) -> list[dict[str, Any]]:
    keys = sorted((set(claimed) | set(recomputed)) - {"alias", *BASELINE_KEYS})  # the baseline is not sent
    return [
        {"metric": k, "claimed": claimed.get(k), "recomputed": recomputed.get(k)}
        for k in keys
        if not _same(claimed.get(k), recomputed.get(k), tolerance)
    ]


def _dataset_docs(opened: OpenTask | None, records: list[SampleRecord]) -> tuple[int, int] | None:
    """(samples whose doc is not the dataset's doc of that id, the task's doc count); None without the
    dataset."""
    if opened is None:
        return None
    docs = opened.docs
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
    return differing, len(docs)


@dataclass(frozen=True)
class Coverage:
    """How much of its task a submission's samples cover, as far as the server can tell."""

    expected: int | None  # the task's docs: the dataset's count, else the claimed effective n-samples
    covered: int  # distinct doc ids of the samples in range(expected)
    samples: int
    errors: int
    limit: int | None  # the run's claimed --limit when it cut the task (known only without the dataset)

    def problems(self, max_error_share: float) -> list[str]:
        """Why the samples do not stand for the whole task (empty when they do)."""
        out = []
        if self.expected is not None and self.covered < self.expected:
            out.append(f"covers {self.covered} of the task's {self.expected} docs")
        if self.limit is not None:
            out.append(f"the run was cut to {self.limit} docs (--limit)")
        if self.samples and self.errors / self.samples > max_error_share:
            out.append(
                f"{self.errors} of {self.samples} samples are errors (over the {max_error_share:.0%} "
                "this server accepts)"
            )
        return out


def coverage(
    records: list[SampleRecord], counts: TaskCounts, claimed_size: Any, claimed_limit: Any, dataset_size: int | None
) -> Coverage:
    """The samples' coverage of their task: against the server's copy of the dataset when it has one, else
    against the run's own claim (``n-samples`` effective, and ``--limit``)."""
    expected = dataset_size
    limit = None
    if expected is None:
        effective = claimed_size.get("effective") if isinstance(claimed_size, dict) else None
        expected = effective if isinstance(effective, int) and not isinstance(effective, bool) else None
        if isinstance(claimed_limit, int) and expected is not None and expected >= claimed_limit:
            limit = claimed_limit
    ids = {r.doc_id for r in records}
    covered = len(ids) if expected is None else sum(0 <= i < expected for i in ids)
    return Coverage(expected, covered, counts.samples, counts.errors, limit)


_REPORT_ARTEFACTS = ("plot", "plots", "plot_not_drawn")  # the report's files, or why one is missing: not figures


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    """A report as {dotted path: leaf value}, without the names of its plot files."""
    if isinstance(value, dict):
        return {
            k: v
            for key, item in value.items()
            if key not in _REPORT_ARTEFACTS
            for k, v in _leaves(item, f"{path}.{key}" if path else str(key)).items()
        }
    return {path: value}


def _compare_reports(
    claimed: dict[str, Any] | None, recomputed: dict[str, Any] | None, tolerance: float
) -> list[dict[str, Any]]:
    """The figures of a task report that differ between the claim and the server's recomputation (the
    first five, by path)."""
    if claimed is None or recomputed is None:
        return (
            []
            if claimed == recomputed
            else [
                {
                    "metric": "report",
                    "claimed": "present" if claimed else None,
                    "recomputed": "present" if recomputed else None,
                }
            ]
        )
    ours, theirs = _leaves(recomputed), _leaves(claimed)
    differing = [k for k in sorted(set(ours) | set(theirs)) if not _same(theirs.get(k), ours.get(k), tolerance)]
    return [{"metric": f"report {k}", "claimed": theirs.get(k), "recomputed": ours.get(k)} for k in differing[:5]]


def _check(
    base: dict[str, str],
    claimed: dict[str, Any],
    claimed_counts: TaskCounts,
    records: list[SampleRecord],
    rescored: list[SampleRecord],
    recomputed: dict[str, Any],
    counts: TaskCounts,
    bad_docs: int | None,
    covers: Coverage,
    reports: tuple[dict[str, Any] | None, dict[str, Any] | None],
    tolerance: float,
    max_error_share: float,
    requests: RequestCheck,
) -> TaskCheck:
    """Compare a task's claims (figures, report, counts, per-sample metrics, docs) with the server's
    re-scoring, and its samples with the whole task."""
    mismatches = _compare(claimed, recomputed, tolerance) + _compare_reports(*reports, tolerance)
    if claimed_counts.model_dump() != counts.model_dump():
        mismatches.append(
            {"metric": "counts", "claimed": claimed_counts.model_dump(), "recomputed": counts.model_dump()}
        )
    differing = sum(
        not _same(a.metrics, b.metrics, tolerance) or a.unparsed != b.unparsed
        for a, b in zip(records, rescored, strict=True)
    )
    problems = []
    if requests.modified:
        problems.append(
            f"{requests.differing} sample request(s) differ from this server's task (first: {requests.first})"
        )
    if mismatches:
        problems.append(f"{len(mismatches)} claimed figure(s) differ from the re-scored samples")
    if differing:
        problems.append(f"{differing} sample(s) carry per-sample metrics that differ")
    if bad_docs:
        problems.append(f"{bad_docs} sample doc(s) differ from the dataset")
    partial = covers.problems(max_error_share)
    docs_checked = bad_docs is not None
    status = (
        MODIFIED
        if requests.modified
        else MISMATCH
        if problems
        else PARTIAL
        if partial
        else VERIFIED
        if docs_checked
        else RESCORED
    )
    notes = (
        problems + partial + ([] if docs_checked else ["docs not checked: this server holds no copy of the dataset"])
    )
    return TaskCheck(
        **base,
        status=status,
        message="; ".join(notes),
        mismatches=tuple(mismatches),
        samples_differing=differing,
        docs_checked=docs_checked,
        docs_expected=covers.expected,
        docs_covered=covers.covered,
        errors=covers.errors,
    )


def _group_message(state: str, mismatches: list[dict[str, Any]], members: list[TaskCheck]) -> str:
    """Why a group is not verified: its own differing figures, else the member tasks that set its state."""
    if mismatches:
        return f"{len(mismatches)} claimed group figure(s) differ"
    if state == VERIFIED:
        return ""
    return "as its task(s) " + "; ".join(f"{m.task} ({m.message or m.status})" for m in members if m.status == state)


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


def timed_out(bundle: Bundle, registry: TaskRegistry, budget_s: float) -> Verification:
    """The claims of a submission whose re-scoring ran past the server's budget: every task shown with its
    claimed values, marked ``unverifiable (timeout)``, never as verified."""
    run = bundle.run
    checks, higher = {}, {}
    for task in bundle.samples:
        config = _server_config(registry, task, run.versions.get(task))
        higher[task] = {m.metric: m.higher_is_better for m in config.metric_list}
        checks[task] = TaskCheck(
            task=task,
            protocol=table_of(task, registry),
            version=str(config.version),
            status=UNVERIFIABLE,
            message=f"unverifiable (timeout): re-scoring ran past this server's {budget_s:g} s budget",
        )
    return Verification(
        results={t: run.results[t] for t in bundle.samples},
        counts={t: run.counts[t] for t in bundle.samples},
        groups={},
        reports={},
        checks=checks,
        higher_is_better=higher,
    )


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


def verify(
    bundle: Bundle,
    registry: TaskRegistry,
    data_dir: Path | None = None,
    tolerance: float = 1e-9,
    max_error_share: float = MAX_ERROR_SHARE,
) -> Verification:
    """Re-score every task of ``bundle`` and compare with its claims; unknown tasks or task versions
    are refused (the server would not be running the code that scored them)."""
    run = bundle.run
    configs = {task: _server_config(registry, task, run.versions.get(task)) for task in bundle.samples}
    _check_groups(registry, bundle)
    family = model_family_of(run)
    higher = {task: {m.metric: m.higher_is_better for m in c.metric_list} for task, c in configs.items()}
    bases: dict[str, dict[str, Any]] = {
        task: {"task": task, "protocol": table_of(task, registry), "version": str(c.version)}
        for task, c in configs.items()
    }
    checked = {
        task: _open_and_check(task, configs[task], records, bundle, family, data_dir)
        for task, records in bundle.samples.items()
    }
    unscorable = {t for t, c in configs.items() if c.process_results_use_image and checked[t][0] is None}
    inputs = {
        task: _rescoring_input(task, configs[task], family, records, checked[task][0])
        for task, records in bundle.samples.items()
        if task not in unscorable
    }
    try:
        scored, _ = score_tasks(inputs, scoring_order(registry, run.config.tasks, list(inputs)))
    except Exception as exc:  # the submitted samples broke a task's aggregation
        raise SubmissionError(f"the samples cannot be scored ({type(exc).__name__}: {exc})") from None
    results: dict[str, dict[str, Any]] = {}
    counts: dict[str, TaskCounts] = {}
    reports: dict[str, dict[str, Any]] = {}
    checks: dict[str, TaskCheck] = {}
    with tempfile.TemporaryDirectory(prefix="leaderboard-report-") as tmp:
        for task in bundle.samples:
            opened, requests = checked[task]
            if task in unscorable:
                results[task], counts[task] = run.results[task], run.counts[task]
                checks[task] = _unscorable_check(bases[task], requests)
                continue
            out = scored[task]
            results[task], counts[task] = out.results, out.counts
            report, checks[task] = _rescored_check(
                bases[task], bundle, out, inputs[task].scorer, opened, requests, Path(tmp), tolerance, max_error_share
            )
            if report is not None:
                reports[task] = report
        plots = {p.name: p.read_bytes() for p in sorted(Path(tmp).glob("*.png"))}
    rescored_samples = {task: out.records for task, out in scored.items()}
    groups, _ = group_results(registry, [g for g in run.group_subtasks if g in registry.groups], results, counts)
    headlines = _headlines(bundle, checks, results, reports, rescored_samples)
    for group, values in groups.items():
        members = [checks[m] for m in run.group_subtasks.get(group, []) if m in checks]
        if members and group in run.groups and all(m.status != UNVERIFIABLE for m in members):
            mismatches = _compare(run.groups[group], values, tolerance)
            state = MISMATCH if mismatches else worst({m.status for m in members} - {MISMATCH})
            checks[group] = TaskCheck(
                task=group,
                protocol=members[0].protocol,
                version="group",
                status=state,
                message=_group_message(state, mismatches, members),
                mismatches=tuple(mismatches),
                docs_checked=all(m.docs_checked for m in members),
            )
    return Verification(
        results=results,
        counts=counts,
        groups=groups,
        reports=reports,
        checks=checks,
        higher_is_better=higher,
        plots=plots,
        headlines=headlines,
    )


def _open_and_check(
    task: str,
    config: TaskConfig,
    records: list[SampleRecord],
    bundle: Bundle,
    family: str | None,
    data_dir: Path | None,
) -> tuple[OpenTask | None, RequestCheck]:
    """The task opened over the server's dataset (None without one) and its samples' requests checked."""
    try:
        opened = open_task(config, family, data_dir) if _has_dataset(config, data_dir) else None
        return opened, check_requests(config, records, bundle.run, opened)
    except Exception as exc:  # the submitted samples broke the task's code
        raise SubmissionError(
            f"task {task}: the samples' requests cannot be rebuilt ({type(exc).__name__}: {exc})"
        ) from None


def _unscorable_check(base: dict[str, Any], requests: RequestCheck) -> TaskCheck:
    """A task whose scoring reads images, without the server's copy of its dataset: its requests checked,
    its figures not re-scorable."""
    if requests.modified:
        return TaskCheck(
            **base, status=MODIFIED, message=f"requests differ from this server's task (first: {requests.first})"
        )
    return TaskCheck(
        **base, status=UNVERIFIABLE, message="not re-scorable without the dataset: its scoring reads images"
    )


def _rescored_check(
    base: dict[str, Any],
    bundle: Bundle,
    out: ScoredTask,
    scorer: TaskScorer,
    opened: OpenTask | None,
    requests: RequestCheck,
    plots: Path,
    tolerance: float,
    max_error_share: float,
) -> tuple[dict[str, Any] | None, TaskCheck]:
    """A re-scored task's report (its plots drawn in ``plots``) and its check against the claims."""
    task, run, records = base["task"], bundle.run, bundle.samples[base["task"]]
    try:
        report = scorer.report(out.records, plots)
        dataset = _dataset_docs(opened, records)
    except Exception as exc:  # the submitted samples broke the task's code
        raise SubmissionError(f"task {task}: the samples cannot be scored ({type(exc).__name__}: {exc})") from None
    covers = coverage(records, out.counts, run.n_samples.get(task), run.config.limit, dataset[1] if dataset else None)
    return report, _check(
        base,
        run.results[task],
        run.counts[task],
        records,
        out.records,
        out.results,
        out.counts,
        dataset[0] if dataset else None,
        covers,
        (run.reports.get(task), report),
        tolerance,
        max_error_share,
        requests,
    )


def _headlines(
    bundle: Bundle,
    checks: dict[str, TaskCheck],
    results: dict[str, dict[str, Any]],
    reports: dict[str, dict[str, Any]],
    samples: dict[str, list[SampleRecord]],
) -> dict[str, dict[str, dict[str, Any]]]:
    """Each protocol's headline figures of this submission, from the server's re-scored samples, values and
    reports of the protocol's tasks (tasks that could not be re-scored are left out)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for protocol, hooks in board_protocols():
        tasks = [t for t, c in checks.items() if c.protocol == protocol.name and t in samples]
        if hooks.headline is None or not tasks:
            continue
        evidence = Evidence(
            model=bundle.model,
            model_type=bundle.run.provenance.model.model_type,
            results={t: results[t] for t in tasks},
            reports={t: reports[t] for t in tasks if t in reports},
            samples={t: samples[t] for t in tasks},
        )
        try:
            figures = hooks.headline(evidence)
        except Exception as exc:  # the protocol's code broke on the submitted samples
            raise SubmissionError(
                f"{protocol.name}: the headline figures cannot be computed from the samples "
                f"({type(exc).__name__}: {exc})"
            ) from None
        out[protocol.name] = {key: estimate.as_json() for key, estimate in figures.items()}
    return out


def _rescoring_input(
    task: str, config: TaskConfig, family: str | None, records: list[SampleRecord], opened: OpenTask | None
) -> TaskScoring:
    """A task's submitted samples ready to re-score: with the opened task when its scoring reads the images."""
    if opened is not None and config.process_results_use_image:
        return TaskScoring(opened.scorer, records, [opened.docs[r.doc_id] for r in records])
    try:
        return rescoring_input(config, family, records, None)
    except Exception as exc:  # the task's code cannot be opened for these samples
        raise SubmissionError(f"task {task}: the samples cannot be scored ({type(exc).__name__}: {exc})") from None


def _has_dataset(config: TaskConfig, data_dir: Path | None) -> bool:
    """Whether the server holds a local copy of the task's dataset (it never downloads one)."""
    return data_dir is not None and bool(config.dataset_path) and resolve_path(str(config.dataset_path), data_dir)[1]
