"""VISTA on the command line: ``harness audit vista`` over saved runs, and the audit that follows a
multi-model ``harness eval`` of a VISTA task (``--judge`` picks its entailment judge)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.arguments import audit_folder, response_store, show_progress
from harness.judges.prompts import DEFAULT_JUDGE
from harness.paths import audit_dir
from harness.protocols.audit_report import interval_note, with_interval
from harness.protocols.base import Command, EvalOutcome, EvalSettings
from harness.protocols.vista.audit_report import VistaAuditReport

if TYPE_CHECKING:
    from harness.metrics.entailment_clusters import ClusteringRule
    from harness.protocols.vista.metrics import Reference

# The choices of --clustering and --reference, spelled here (checked against their Literal types) so that
# building the parser loads no numerical library.
CLUSTERING_CHOICES: tuple[ClusteringRule, ...] = ("components", "strict")
REFERENCE_CHOICES: tuple[Reference, ...] = ("all", "peers")


def eval_arguments(group: Any) -> None:
    """``harness eval``'s ``--judge``: the entailment judge of the audit that follows a multi-model VISTA eval."""
    group.add_argument(
        "--judge",
        default=DEFAULT_JUDGE,
        help="entailment judge of the cross-model audit that follows a multi-model vista eval "
        f"(default: the VISTA paper's, {DEFAULT_JUDGE}; offline: embedding or nli:MODEL)",
    )


def check_eval(settings: EvalSettings) -> None:
    """Refuse a ``--judge`` that cannot load before the models run: the audit that needs it comes last."""
    from harness.judges.entailment import check_judge

    if len(settings.models) >= 2:
        check_judge(settings.text("judge"))


def after_eval(outcome: EvalOutcome) -> None:
    """Audit the models just evaluated on each VISTA task, print the per-model table and write the audit
    beside the runs; one model alone has nothing to be compared with."""
    from harness.judges.entailment import make_judge
    from harness.protocols.vista.audit import AuditConfig, audit_records, write_audit

    run = outcome.settings.run
    for task, records in outcome.samples.items():
        if len(records) < 2:
            print(
                f"\n{task}: one model evaluated; run `harness audit vista` over two or more runs for the "
                "cross-model audit"
            )
            continue
        judge = make_judge(outcome.settings.text("judge"), run.store_path)
        result = audit_records(records, judge, AuditConfig(task=task), show_progress=run.show_progress)
        print(f"\nVISTA audit of {task} ({len(records)} models, judge {judge.name})")
        _print_audit(result.report(judge.name))
        if run.output is not None:
            out = write_audit(result, audit_dir(run.output, task), judge.name)
            print(f"audit: {out / 'audit.json'}")
        else:
            print(
                "audit: not saved (no --output); the same command with --output DIR writes the runs and the "
                "audit from the response store"
            )


def _print_audit(report: VistaAuditReport) -> None:
    print("| Model | Queries | Mean S [95% CI] | Max S | Flags | Pattern | Refusal | Detection [95% CI] |")
    print("|---|---|---|---|---|---|---|---|")
    for model, row in report.per_model.items():
        det = row.detection
        mean = with_interval(row.mean_suspicion, row.interval("mean_suspicion"))
        score = with_interval(det.score, row.interval("detection_score"))
        print(
            f"| {model} | {row.queries} | {mean} | {row.max_suspicion:.3f} | {row.flags} | "
            f"{row.dominant_pattern or '-'} | {row.refusal_rate:.2f} | "
            f"{'positive' if det.positive else 'negative'} ({score}) |"
        )
    note = interval_note([r.intervals.mean_suspicion for r in report.per_model.values() if r.intervals])
    cached = report.judge_decisions - report.judge_model_calls
    print(
        f"{note}\njudge decisions: {report.judge_decisions} ({report.judge_model_calls} computed now, {cached} from "
        f"the cache; all pairs would be {report.all_pairs_calls}); skipped queries: {report.skipped_queries}"
    )


def _add_audit_arguments(va: argparse.ArgumentParser) -> None:
    va.add_argument("run_dirs", nargs="+", help="run folders (one per model) written by harness eval")
    va.add_argument("--task", default="vista", help="the task whose samples are pooled (default vista)")
    va.add_argument(
        "--judge",
        default=DEFAULT_JUDGE,
        help="entailment judge: a model spec asked the paper's A.2 question (default: the VISTA paper's, "
        f"{DEFAULT_JUDGE}), embedding[:threshold] (offline cosine) or nli:MODEL (cross-encoder)",
    )
    va.add_argument("--judge-args", help="k=v,... for an LLM judge's backend")
    va.add_argument("--judge-prompt", help="file with the LLM judge's Yes/No question ({premise}, {hypothesis})")
    va.add_argument("--no-stability", action="store_true", help="skip the leave-one-peer-out re-clustering")
    add_score_arguments(va)
    va.add_argument(
        "--reference",
        choices=REFERENCE_CHOICES,
        default="all",
        help="Divergence against the mean of all models (default) or of the peers only",
    )
    va.add_argument("--cache", help="response store for judge decisions")
    va.add_argument("--output", help="audit folder (default: beside the runs)")


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    """The score's settings both VISTA audits take: ``--alpha``, ``--theta`` and ``--clustering``."""
    parser.add_argument("--alpha", type=float, default=0.5, help="Confidence's weight of uniformity (default 0.5)")
    parser.add_argument("--theta", type=float, default=0.6, help="flag a pair, detect a model, at S >= theta (0.6)")
    parser.add_argument(
        "--clustering",
        choices=CLUSTERING_CHOICES,
        default="components",
        help="entailment clusters: connected components (default) or strict cliques",
    )


def _cmd_audit_vista(args: argparse.Namespace) -> int:
    from harness.judges.entailment import make_judge
    from harness.models.base import parse_model_args
    from harness.protocols.vista.audit import AuditConfig, run_audit, write_audit

    run_dirs = [Path(d) for d in args.run_dirs]
    config = AuditConfig(
        task=args.task,
        alpha=args.alpha,
        theta=args.theta,
        clustering=args.clustering,
        reference=args.reference,
        stability=not args.no_stability,
    )
    prompt = Path(args.judge_prompt).read_text(encoding="utf-8") if args.judge_prompt else None
    judge = make_judge(args.judge, response_store(args), parse_model_args(args.judge_args), prompt)
    result = run_audit(run_dirs, judge, config, show_progress=show_progress(args))
    if result.skipped_runs:
        print(f"skipped {result.skipped_runs} run(s) without task {config.task!r}; auditing {len(result.models)}")
    out = write_audit(result, audit_folder(args.output, run_dirs, "vista"), judge.name)
    _print_audit(result.report(judge.name))
    print(f"audit: {out / 'audit.json'}")
    return 0


AUDIT = Command("vista", "cross-model semantic-divergence audit", _add_audit_arguments, _cmd_audit_vista)
