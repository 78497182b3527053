"""Build one model's audit across the protocols from run and audit folders: which protocol each run's tasks
belong to (the registry), each protocol's headline figures (its leaderboard hooks' figures, computed from
the model's runs, and the task metrics of results.json, each with the interval the run or audit recorded),
its evidence (its extractor), and the commands that re-create them. It never names a protocol: everything
protocol-specific comes through the registry."""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import HarnessError
from harness.protocols.base import Protocol, protocol_of_task, protocols
from harness.protocols.evidence import (
    DEFAULT_ITEMS,
    EvidenceInput,
    LoadedRun,
    ProtocolEvidence,
    ReferenceValue,
    as_mapping,
    extractor_of,
    interval_from,
    load_extension,
)
from harness.protocols.leaderboard_hooks import Estimate, Evidence, LeaderboardHooks
from harness.report.model import (
    Command,
    DatasetUsed,
    HeadlineFigure,
    ModelAudit,
    NotRun,
    ProtocolPart,
    RunSummary,
)
from harness.results.interval import Interval
from harness.results.metric_key import figures
from harness.results.schema import read_run
from harness.taskspec.registry import TaskRegistry

log = logging.getLogger(__name__)

#: How deep below a given folder runs and audits are looked for, and how many folders at most are visited.
MAX_DEPTH = 4
MAX_FOLDERS = 5_000
_SECRET = re.compile(r"(key|token|secret|password|passwd|auth)", re.IGNORECASE)


@dataclass(frozen=True)
class ReportOptions:
    """What ``harness report`` was asked for: the folders to read, the model (None: the only one there),
    how many items each evidence section shows, and where the datasets are (None: where the runs say)."""

    paths: Sequence[Path]
    model: str | None = None
    max_items: int = DEFAULT_ITEMS
    data_dir: Path | None = None  # where the datasets are, when not where the runs' provenance says


def find_folders(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """The run folders (holding results.json) and audit folders (holding audit.json) at or below each path,
    in order; a path that is not a folder is one line."""
    runs: list[Path] = []
    audits: list[Path] = []
    visited = 0
    for root in paths:
        if not root.is_dir():
            raise HarnessError(f"{root}: not a folder (give run folders, audit folders or folders holding them)")
        stack = [(root, 0)]
        while stack:
            folder, depth = stack.pop()
            visited += 1
            if visited > MAX_FOLDERS:
                raise HarnessError(f"more than {MAX_FOLDERS} folders below {', '.join(map(str, paths))}; give fewer")
            if (folder / "results.json").is_file():
                runs.append(folder)
            if (folder / "audit.json").is_file():
                audits.append(folder)
            if depth < MAX_DEPTH:
                children = sorted(
                    (p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and p.name != "original"),
                    reverse=True,
                )
                stack.extend((child, depth + 1) for child in children)
    return list(dict.fromkeys(runs)), list(dict.fromkeys(audits))


def _summary(run: LoadedRun) -> RunSummary:
    results = run.results
    prov = results.provenance
    config = results.config
    return RunSummary(
        path=str(run.path),
        model=run.model,
        model_revision=prov.model.revision or prov.model.commit,
        model_fingerprint=prov.model.fingerprint,
        smoke_test_model=prov.model.smoke_test_model,
        tasks={task: counts.scored for task, counts in results.counts.items()},
        errors={task: counts.errors for task, counts in results.counts.items() if counts.errors},
        datasets=[
            DatasetUsed(
                task=task,
                kind=found.kind,
                where=found.path or found.repo,
                revision=found.revision or found.sha256,
                rows=found.num_rows,
            )
            for task, found in prov.datasets.items()
        ],
        harness_version=prov.harness_version,
        git_revision=prov.git_revision,
        started_at=prov.started_at,
        settings={
            "limit": config.limit,
            "seed": config.seed,
            "repeats": config.repeats,
            "batch_size": config.batch_size,
            "gen_overrides": config.gen_overrides,
            "model_args": {k: ("<redacted>" if _SECRET.search(k) else v) for k, v in config.model_args.items()},
            "generation": {task: g.model_dump() for task, g in prov.generation.items()},
        },
    )


def _redacted(argv: Sequence[str]) -> str:
    """A recorded command line with the values of secret-looking ``key=value`` arguments hidden."""
    out = []
    for arg in argv:
        parts = arg.split(",")
        out.append(
            ",".join(
                f"{p.split('=', 1)[0]}=<redacted>" if "=" in p and _SECRET.search(p.split("=", 1)[0]) else p
                for p in parts
            )
        )
    return shlex.join(out)


def _run_command(run: LoadedRun) -> str:
    """The command that made the run: as recorded when ``harness`` made it, else (a run made from Python, a
    test) rebuilt from its config."""
    argv = run.results.provenance.command
    program = Path(argv[0]) if argv else None
    if program is not None and (program.name == "harness" or program.parent.name in ("harness", "cli")):
        return _redacted(["harness", *argv[1:]])
    config = run.results.config
    parts = ["harness", "eval", "--model", config.model, "--tasks", ",".join(config.tasks or run.tasks)]
    if config.model_args:
        parts += ["--model-args", ",".join(f"{k}={v}" for k, v in config.model_args.items())]
    if config.limit is not None:
        parts += ["--limit", str(config.limit)]
    if config.repeats is not None:
        parts += ["--repeats", str(config.repeats)]
    if config.gen_overrides:
        parts += ["--gen-kwargs", ",".join(f"{k}={v}" for k, v in config.gen_overrides.items())]
    parts += ["--seed", str(config.seed), "--output", str(run.path.parent.parent)]
    return _redacted(parts)


def _estimate_interval(estimate: Estimate) -> Interval | None:
    """The interval a headline estimate carries: its Interval when it has one, else its ci pair."""
    recorded = interval_from(getattr(estimate, "interval", None))
    if recorded is not None:
        return recorded
    if estimate.ci is None:
        return None
    return Interval(low=estimate.ci[0], high=estimate.ci[1], n=estimate.n or 0, unit="unit")


def _hooks(protocol: Protocol) -> LeaderboardHooks | None:
    found = load_extension(protocol, "leaderboard")
    return found if isinstance(found, LeaderboardHooks) else None


def _hook_figures(
    protocol: Protocol, runs: Sequence[LoadedRun], tasks: Sequence[str], references: Sequence[ReferenceValue]
) -> tuple[list[HeadlineFigure], list[str]]:
    """The protocol's leaderboard headline figures, computed from the model's runs as the server would."""
    hooks = _hooks(protocol)
    if hooks is None or hooks.headline is None or not runs:
        return [], []
    results: dict[str, Mapping[str, Any]] = {}
    reports: dict[str, Mapping[str, Any]] = {}
    samples: dict[str, Any] = {}
    for run in runs:
        for task in tasks:
            if task in run.tasks:
                results[task] = run.results.results[task]
                reports[task] = run.results.reports.get(task, {})
                samples[task] = run.samples(task)
    first = runs[0].results
    evidence = Evidence(runs[0].model, first.provenance.model.model_type, results, reports, samples)
    try:
        estimates = hooks.headline(evidence)
    except Exception as exc:  # a protocol's hook failing on odd runs must not take the report down
        log.debug("headline of %s", protocol.name, exc_info=True)
        return [], [f"its headline figures could not be computed: {type(exc).__name__}: {exc}"]
    labels = {f.key: f.label for f in hooks.figures}
    return [
        HeadlineFigure(
            key=key,
            label=labels.get(key, key),
            kind="headline",
            value=estimate.value if not isinstance(estimate.value, float) or estimate.value == estimate.value else None,
            interval=_estimate_interval(estimate),
            n=estimate.n,
            source="the protocol's headline (as the leaderboard computes it)",
            references=[r for r in references if r.figure == key],
        )
        for key, estimate in estimates.items()
    ], []


def _task_figures(runs: Sequence[LoadedRun], tasks: Sequence[str]) -> list[HeadlineFigure]:
    """Every task metric of results.json with the interval the run recorded under ``intervals``."""
    out = []
    for run in runs:
        extra = run.results.model_extra or {}
        intervals = as_mapping(extra.get("intervals"))
        for task in tasks:
            if task not in run.tasks:
                continue
            recorded = as_mapping(intervals.get(task))
            counts = run.results.counts.get(task)
            for metric, value in figures(run.results.results[task]):
                out.append(
                    HeadlineFigure(
                        key=f"{task}/{metric.encoded}",
                        label=f"{task}: {metric.label}",
                        kind="task metric",
                        value=value if isinstance(value, int | float | str) and not isinstance(value, bool) else None,
                        interval=interval_from(recorded.get(metric.encoded)),
                        n=counts.scored if counts else None,
                        source=f"results.json of {run.path.name}",
                    )
                )
    return out


def _reproduce(
    protocol: Protocol, runs: Sequence[LoadedRun], all_runs: Sequence[LoadedRun], audits: Sequence[Path]
) -> list[Command]:
    commands = [Command(purpose=f"the run {run.path}", command=_run_command(run)) for run in runs]
    commands += [
        Command(
            purpose=f"its figures from the saved samples, without the model ({run.path.name})",
            command=shlex.join(["harness", "score", str(run.path)]),
        )
        for run in runs
    ]
    if protocol.audit is not None:
        for folder in audits:
            compared = [str(r.path) for r in all_runs]
            commands.append(
                Command(
                    purpose=f"the audit in {folder} (its settings are in its audit.json)",
                    command=shlex.join(["harness", "audit", protocol.name, *compared, "--output", str(folder)]),
                )
            )
    return commands


def _matching_audits(protocol: Protocol, audits: Sequence[Path]) -> list[Path]:
    if protocol.audit_report is None:
        return []
    found = []
    for folder in audits:
        try:
            protocol.read_audit(folder)
        except HarnessError:
            continue
        found.append(folder)
    return found


def _evidence(
    protocol: Protocol, runs: Sequence[LoadedRun], audits: Sequence[Path], model: str, max_items: int
) -> tuple[ProtocolEvidence | None, list[str]]:
    extractor = extractor_of(protocol)
    if extractor is None:
        return None, ["the protocol declares no evidence extractor"]
    try:
        return extractor(EvidenceInput(runs=runs, audits=audits, model=model, max_items=max_items)), []
    except HarnessError as exc:
        return None, [f"its evidence could not be read: {exc}"]


def build_report(options: ReportOptions) -> ModelAudit:
    """The model's audit across every protocol its runs (or audits) cover, and what is missing and why."""
    run_dirs, audit_dirs = find_folders(options.paths)
    if not run_dirs:
        raise HarnessError(f"no run folder (results.json) in {', '.join(map(str, options.paths))}")
    runs = [LoadedRun(path, read_run(path), options.data_dir) for path in run_dirs]
    models = sorted({r.model for r in runs})
    model = options.model
    if model is None:
        if len(models) > 1:
            raise HarnessError(f"the runs hold {len(models)} models ({', '.join(models)}): choose one with --model")
        model = models[0]
    if model not in models:
        raise HarnessError(f"no run of {model!r} among the folders given (models there: {', '.join(models)})")
    registry = TaskRegistry.discover()
    owner = {task: protocol_of_task(task, registry) for r in runs for task in r.tasks}
    own = [r for r in runs if r.model == model]
    parts: list[ProtocolPart] = []
    not_run: list[NotRun] = []
    for protocol in protocols():
        tasks = list(dict.fromkeys(t for r in own for t in r.tasks if owner.get(t) is protocol))
        audits = _matching_audits(protocol, audit_dirs)
        if not tasks:
            reason = (
                f"no run of {model} holds its tasks ({', '.join(protocol.tasks)})"
                if protocol.tasks
                else f"it runs through its own commands, not tasks (harness audit {protocol.name}), and this report "
                "reads runs of tasks"
            )
            not_run.append(NotRun(protocol=protocol.title, reason=reason))
            continue
        runs_of = [r for r in runs if any(owner.get(t) is protocol for t in r.tasks)]
        own_runs = [r for r in runs_of if r.model == model]
        evidence, notes = _evidence(protocol, runs_of, audits, model, options.max_items)
        references = evidence.references if evidence else []
        headline, more = _hook_figures(protocol, own_runs, tasks, references)
        notes += more
        if protocol.audit is not None and not audits:
            not_run.append(
                NotRun(
                    protocol=protocol.title,
                    reason=f"its audit (harness audit {protocol.name}) is not among the folders given",
                )
            )
        parts.append(
            ProtocolPart(
                protocol=protocol.name,
                title=protocol.title,
                summary=protocol.summary,
                tasks=tasks,
                runs=[str(r.path) for r in own_runs],
                audits=[str(a) for a in audits],
                headline=headline + _task_figures(own_runs, tasks),
                evidence=evidence,
                reproduce=_reproduce(protocol, own_runs, runs_of, audits),
                notes=notes,
            )
        )
    return ModelAudit(
        model=model,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        harness_version=__version__,
        runs=[_summary(r) for r in own],
        peers=[m for m in models if m != model],
        protocols=parts,
        not_run=not_run,
        other_tasks=sorted({t for r in own for t in r.tasks if owner.get(t) is None}),
    )
