"""DiaVLo on the command line: ``harness audit diavlo`` (classes, MI and DML concept effects over saved runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from harness.arguments import add_run_task_arguments, audit_folder, data_dir, response_store
from harness.protocols.base import Command
from harness.protocols.diavlo.audit_report import DiavloAuditReport

if TYPE_CHECKING:
    from harness.protocols.diavlo.audit import ConceptSource
    from harness.protocols.diavlo.metrics import MiEstimator

# The choices of --concepts and --mi-estimator, spelled here (checked against their Literal types) so that
# building the parser loads no numerical library.
CONCEPT_CHOICES: tuple[ConceptSource, ...] = ("rk", "rk_or_sk")
MI_ESTIMATOR_CHOICES: tuple[MiEstimator, ...] = ("knn", "binned")


def _add_audit_arguments(dv: argparse.ArgumentParser) -> None:
    """``harness audit diavlo``'s flags: the runs, the model for the counterfactual re-runs, the detector,
    the class thresholds, MI and DML settings, and where to read and write."""
    dv.add_argument("run_dirs", nargs="+", help="run folders of diavlo_<source> tasks (one per model)")
    dv.add_argument("--model", help="model spec for the counterfactual re-runs (default: each run's own)")
    dv.add_argument("--model-args", help="k=v,... for that model (default: each run's own)")
    dv.add_argument("--detector", help="boxes for RK concepts no SK concept matches: hf:ID_OR_FOLDER or tiny:owlv2")
    dv.add_argument(
        "--concepts",
        choices=CONCEPT_CHOICES,
        default="rk",
        help="occlude RK concepts, or fall back to SK concepts when a pair has no usable RK",
    )
    dv.add_argument(
        "--max-subsets",
        type=int,
        default=1024,
        help="occlusion designs per pair: the full power set up to this size (default 1024, i.e. "
        "up to 10 concepts), a seeded sample of this many beyond",
    )
    dv.add_argument("--match-threshold", type=float, default=0.6, help="RK-SK concept cosine to borrow a box")
    dv.add_argument("--tau-a", type=float, default=0.75, help="Aligned when sim >= tau_a (default 0.75)")
    dv.add_argument("--tau-e", type=float, default=0.35, help="Expanded when sim >= tau_e (default 0.35)")
    dv.add_argument("--tau-d", type=float, default=0.35, help="Divergent when sim < tau_d (default 0.35)")
    dv.add_argument(
        "--mi-estimator",
        choices=MI_ESTIMATOR_CHOICES,
        default="knn",
        help="I(sim; perf): nearest-neighbour estimators (default) or equal-width bins",
    )
    dv.add_argument(
        "--mi-resamples", type=int, default=1000, help="bootstrap resamples of the MI's 95%% CI (default 1000)"
    )
    dv.add_argument("--n-folds", type=int, default=3, help="cross-fitting folds of the DML estimates (default 3)")
    reps = dv.add_mutually_exclusive_group()
    reps.add_argument(
        "--n-rep", type=int, help="repeated random sample splits, median taken (default 100, the paper's)"
    )
    reps.add_argument(
        "--quick", action="store_true", help="5 sample splits instead (a quick look, not the paper's figure)"
    )
    dv.add_argument("--dml-jobs", type=int, default=0, help="threads over the splits (default 0: one per CPU)")
    dv.add_argument("--n-estimators", type=int, default=60, help="trees of each gradient-boosted nuisance")
    dv.add_argument("--min-obs", type=int, default=20, help="fewer counterfactual rows: inconclusive")
    dv.add_argument("--min-arm", type=int, default=5, help="fewer occluded or non-occluded rows: inconclusive")
    dv.add_argument("--seed", type=int, default=0, help="seed of the resamples, splits and sampled subsets")
    dv.add_argument("--batch-size", type=int, default=1, help="occluded prompts per model call (default 1)")
    dv.add_argument("--data-dir", help="where the diavlo dataset is (default: the data dir)")
    dv.add_argument("--cache", help="response store (default ~/.cache/harness/responses.sqlite)")
    dv.add_argument("--output", help="audit folder (default: beside the runs)")
    add_run_task_arguments(dv)


def _cmd_audit_diavlo(args: argparse.Namespace) -> int:
    """Audits each run folder (classes, MI, counterfactual re-runs and concept effects), writes the audit
    folder and prints its summary tables."""
    from harness.engine.store import ResponseStore
    from harness.engine.tasks import run_include_paths
    from harness.models.base import create_backend, parse_model_args
    from harness.protocols.diavlo.audit import DiavloAuditConfig, audit_run, summary_tables, write_audit
    from harness.protocols.diavlo.concept_effects import PAPER_REPS, QUICK_REPS, DMLSettings
    from harness.protocols.diavlo.metrics import Thresholds
    from harness.results.schema import read_run

    n_rep = QUICK_REPS if args.quick else PAPER_REPS if args.n_rep is None else args.n_rep
    config = DiavloAuditConfig(
        thresholds=Thresholds(args.tau_a, args.tau_e, args.tau_d),
        concepts=args.concepts,
        max_subsets=args.max_subsets,
        match_threshold=args.match_threshold,
        mi_estimator=args.mi_estimator,
        mi_resamples=args.mi_resamples,
        seed=args.seed,
        batch_size=args.batch_size,
        dml=DMLSettings(
            n_folds=args.n_folds,
            n_rep=n_rep,
            n_jobs=args.dml_jobs,
            n_estimators=args.n_estimators,
            seed=args.seed,
            min_obs=args.min_obs,
            min_arm=args.min_arm,
        ),
    )
    detector = None
    if args.detector:
        from harness.protocols.diavlo.detector import OpenVocabDetector

        detector = OpenVocabDetector(args.detector)
    store = ResponseStore(response_store(args))
    audits = []
    run_dirs = [Path(d) for d in args.run_dirs]
    for run_dir in run_dirs:
        run = read_run(run_dir)
        spec = args.model or run.config.model
        model_args = parse_model_args(args.model_args) if args.model_args else run.config.model_args
        paths = run_include_paths(run, run_dir, args.include_path, args.trust_run_include_paths)
        audits.append(
            audit_run(run_dir, create_backend(spec, model_args), config, store, data_dir(args), detector, paths)
        )
    store.close()
    out = write_audit(audits, config, audit_folder(args.output, run_dirs, "diavlo"))
    report = DiavloAuditReport.read(out)
    print(summary_tables(report))
    asked = sum(m.counts.counterfactuals for m in report.models.values())
    print(f"\ncounterfactuals: {asked}; audit: {out / 'audit.json'}")
    return 0


AUDIT = Command("diavlo", "DiaVLo classes, MI and concept effects (DML)", _add_audit_arguments, _cmd_audit_diavlo)
