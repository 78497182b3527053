"""FusionAudit on the command line: ``harness attack`` (white-box pixel attacks on an hf model) and
``harness audit fusion`` (ASR, R0, R+, delta, RUG, OAR and fusion levels over saved runs)."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.arguments import audit_folder, data_dir, default_store, names, show_progress
from harness.engine.distributed import add_ray_arguments
from harness.errors import HarnessError
from harness.protocols.audit_report import interval_note, with_interval
from harness.protocols.base import Command
from harness.protocols.fusion.audit_report import FusionAuditReport, ModelFigures

if TYPE_CHECKING:
    from harness.protocols.fusion.attack_outcomes import AttackSummary
    from harness.protocols.fusion.attacks.run import AttackOptions
    from harness.protocols.fusion.metrics import DeltaMode, OarIncreaseMode

# The choices of --delta-mode and --oar-increase, spelled here (checked against their Literal types) so that
# building the parser loads no numerical library.
DELTA_MODE_CHOICES: tuple[DeltaMode, ...] = ("pathway", "suite")
OAR_INCREASE_CHOICES: tuple[OarIncreaseMode, ...] = ("per_item", "ratio_of_means")


def _add_attack_arguments(at: argparse.ArgumentParser) -> None:
    at.add_argument("--model", action="append", required=True, help="hf:NAME or tiny:ARCH (repeatable)")
    at.add_argument("--model-args", help="k=v,... for the backend (dtype, device, attn_implementation, ...)")
    at.add_argument("--tasks", default="fusion_clean", help="the clean task whose correct items are attacked")
    at.add_argument("--attacks", default="vis_pgd,end_pgd,mantis", help="comma-separated: vis_pgd,end_pgd,mantis")
    at.add_argument("--eps", default="8/255", help="L-infinity radius in [0,1] pixels (default 8/255)")
    at.add_argument("--alpha", default="1/255", help="PGD step size (default 1/255)")
    at.add_argument("--steps", type=int, default=40, help="PGD steps (default 40)")
    at.add_argument(
        "--noise-scale",
        type=float,
        default=1.0,
        help="below 1: perturb a downscaled noise field and upsample it (memory fallback)",
    )
    at.add_argument(
        "--seed", type=int, default=0, help="base seed of the clean run's requests and the attacks' random starts"
    )
    at.add_argument("--batch-size", type=int, default=4, help="items attacked together (default 4)")
    at.add_argument("--limit", type=int, help="run the clean task on the first N docs only")
    at.add_argument("--diagnostics", default="oar,restoration", help="oar,restoration or none")
    at.add_argument(
        "--restoration-items",
        type=int,
        default=40,
        help="layer restoration on the first N End-PGD flips by item id (default 40, the paper's)",
    )
    at.add_argument("--clean-run", help="a saved run folder of the clean task (else the task is run first)")
    at.add_argument("--output", default="runs", help="folder for the run (when the clean task is run here)")
    at.add_argument("--data-dir", help="folder holding local dataset copies as DIR/org/name")
    at.add_argument("--include-path", action="append", help="extra task folder (repeatable)")
    add_ray_arguments(at)


def attack_options(args: argparse.Namespace) -> AttackOptions:
    """The attack settings from the command line, refused before any model loads when out of range."""
    from harness.protocols.fusion.attacks.pgd import PGDConfig
    from harness.protocols.fusion.attacks.run import ATTACKS, DIAGNOSTICS, AttackOptions, parse_fraction, parse_list

    tasks = names(args.tasks)
    if len(tasks) != 1:
        raise HarnessError("--tasks: name the one clean task to attack (e.g. fusion_clean)")
    pgd = PGDConfig(
        eps=parse_fraction(args.eps), alpha=parse_fraction(args.alpha), steps=args.steps, noise_scale=args.noise_scale
    )
    if pgd.eps <= 0 or pgd.alpha <= 0 or pgd.steps < 0 or not 0 < pgd.noise_scale <= 1:
        raise HarnessError("need --eps > 0, --alpha > 0, --steps >= 0 and 0 < --noise-scale <= 1")
    if args.restoration_items < 1:
        raise HarnessError("--restoration-items must be at least 1")
    if args.clean_run and len(args.model) > 1:
        raise HarnessError("--clean-run belongs to one model; attack one model at a time with it")
    diagnostics = () if args.diagnostics == "none" else parse_list(args.diagnostics, DIAGNOSTICS, "--diagnostics")
    return AttackOptions(
        attacks=parse_list(args.attacks, ATTACKS, "--attacks"),
        pgd=pgd,
        seed=args.seed,
        batch_size=args.batch_size,
        diagnostics=diagnostics,
        task=tasks[0],
        show_progress=show_progress(args),
        restoration_items=args.restoration_items,
    )


def _clean_run(
    args: argparse.Namespace, backend: Any, spec: str, model_args: dict[str, str], opts: AttackOptions
) -> Path:
    """The clean run to attack: ``--clean-run`` (checked to be this model's), else the clean task run now."""
    from harness.engine.runner import EvalOptions, evaluate
    from harness.results.schema import read_run

    if args.clean_run:
        run_dir = Path(args.clean_run)
        saved = read_run(run_dir).provenance.model.fingerprint
        if saved != backend.fingerprint:
            raise HarnessError(
                f"{run_dir} was run with another model (fingerprint {saved}, this one {backend.fingerprint})"
            )
        return run_dir
    eval_opts = EvalOptions(
        tasks=[opts.task],
        include_paths=args.include_path or [],
        data_dir=data_dir(args),
        seed=args.seed,
        batch_size=args.batch_size,
        limit=args.limit,
        output=Path(args.output),
        store_path=default_store(),
        show_progress=opts.show_progress,
    )
    _, _, written = evaluate(backend, spec, eval_opts, model_args)
    assert written is not None  # evaluate writes a run folder when given an output
    return written


def _cmd_attack(args: argparse.Namespace) -> int:
    from harness.engine.distributed import ray_options, replica_pool
    from harness.models.base import create_backend, parse_model_args
    from harness.protocols.fusion.attacks.losses import white_box
    from harness.protocols.fusion.attacks.run import clean_correct_items, run_attacks, white_box_replica

    opts = attack_options(args)
    ray = ray_options(args.ray, args.workers, args.worker_cpus, args.worker_gpus)
    model_args = parse_model_args(args.model_args)
    for spec in args.model:
        backend = create_backend(spec, model_args)
        attacked = white_box(backend, spec)
        run_dir = _clean_run(args, backend, spec, model_args, opts)
        items, params = clean_correct_items(
            run_dir, opts.task, data_dir(args), args.include_path or [], backend.model_family
        )
        with replica_pool(partial(white_box_replica, spec, model_args), ray) as pool:
            summary = run_attacks(attacked, run_dir, items, params, opts, pool)
        print(attack_table(spec, summary))
        print(f"attack outcomes: {run_dir / 'attack_outcomes.jsonl'}")
    return 0


def attack_table(spec: str, summary: AttackSummary) -> str:
    """The attack run's table (ASR and items per minute per attack, `-` where undefined), and with an empty
    C one line saying why every figure is `-`."""
    lines = [f"\n{spec}: clean-correct items |C| = {summary.n_clean_correct}"]
    if not summary.n_clean_correct:
        why = " (a random-weight smoke-test model answers almost none)" if summary.model.smoke_test_model else ""
        lines.append(
            f"nothing to attack: the model answered none of the clean items of {summary.task} "
            f"correctly{why}, and ASR is a share of C, so every figure below is `-`"
        )
    lines.append("| Attack | ASR [95% CI] | items/min |\n|---|---|---|")
    for attack in summary.attacks:
        asr, rate = summary.asr[attack], summary.items_per_minute[attack]
        interval = with_interval(asr, summary.asr_intervals.get(attack))
        lines.append(f"| {attack} | {interval} | {'-' if rate is None else rate} |")
    note = interval_note(list(summary.asr_intervals.values()))
    return "\n".join([*lines, note] if note else lines)


def _add_audit_arguments(fu: argparse.ArgumentParser) -> None:
    fu.add_argument("run_dirs", nargs="+", help="run folders of harness eval (fusion tasks) and harness attack")
    fu.add_argument(
        "--fusion-level",
        action="append",
        help="MODEL=L1|L2|L3: a level for a family the paper's table does not place, or overriding it (repeatable)",
    )
    fu.add_argument(
        "--delta-mode",
        choices=DELTA_MODE_CHOICES,
        default="pathway",
        help="baselines of a strengthened attack: its own pathway's (default) or the whole suite",
    )
    fu.add_argument(
        "--oar-increase",
        choices=OAR_INCREASE_CHOICES,
        default="per_item",
        help="relative OAR increase over the clean image: mean of per-item ratios (default, the "
        "paper's) or ratio of the mean OARs",
    )
    fu.add_argument(
        "--natevid-all",
        action="store_true",
        help="count Nat-Evid flips on edits whose OCR check found the evidence destroyed",
    )
    fu.add_argument("--resamples", type=int, default=1000, help="paired bootstrap resamples (default 1000)")
    fu.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals and the sweep")
    fu.add_argument("--output", help="audit folder (default: beside the runs)")
    sw = fu.add_argument_group("sweep (--sweep: re-attacks each clean run's own model over the grid)")
    sw.add_argument(
        "--sweep",
        action="store_true",
        help="the paper's pixel sweeps: seeds (stability), PGD steps and eps on the stability subset",
    )
    sw.add_argument("--sweep-items", type=int, default=300, help="stability subset: split over the sources (300)")
    sw.add_argument("--sweep-seeds", default="0,1,2", help="seeds of the stability run (default 0,1,2)")
    sw.add_argument("--sweep-steps", default="10,20,30,40,50", help="PGD step counts (default 10,20,30,40,50)")
    sw.add_argument("--sweep-eps", default="2/255,4/255,8/255", help="eps values (default 2/255,4/255,8/255)")
    sw.add_argument("--attacks", default="vis_pgd,end_pgd,mantis", help="pixel attacks swept")
    sw.add_argument("--steps", type=int, default=40, help="steps of the seed and eps sweeps (default 40)")
    sw.add_argument("--eps", default="8/255", help="eps of the seed and steps sweeps (default 8/255)")
    sw.add_argument("--alpha", default="1/255", help="PGD step size (default 1/255)")
    sw.add_argument("--batch-size", type=int, default=4, help="items attacked together (default 4)")
    sw.add_argument("--data-dir", help="folder holding local dataset copies as DIR/org/name")
    sw.add_argument("--include-path", action="append", help="extra task folder (repeatable)")


def _cmd_audit_fusion(args: argparse.Namespace) -> int:
    from harness.protocols.fusion.audit import FusionAuditConfig, run_fusion_audit, write_fusion_audit
    from harness.protocols.fusion.metrics import LEVELS

    overrides = {}
    for pair in args.fusion_level or []:
        model, sep, level = pair.rpartition("=")
        if not sep or not model or level not in LEVELS:
            raise HarnessError(
                f"--fusion-level expects MODEL=LEVEL with LEVEL one of {', '.join(LEVELS)}, got {pair!r}"
            )
        overrides[model] = level
    run_dirs = [Path(d) for d in args.run_dirs]
    if args.sweep:
        return _sweep(args, run_dirs, overrides)
    config = FusionAuditConfig(
        delta_mode=args.delta_mode,
        oar_mode=args.oar_increase,
        natevid_preserved_only=not args.natevid_all,
        level_overrides=overrides,
        n_resamples=args.resamples,
        seed=args.seed,
    )
    result = run_fusion_audit(run_dirs, config)
    out = write_fusion_audit(result, audit_folder(args.output, run_dirs, "fusion"))
    _print_audit(FusionAuditReport.read(out))
    print(f"audit: {out / 'audit.json'}")
    return 0


def _print_audit(report: FusionAuditReport) -> None:
    """Each model's figures as a Markdown table, a note per model with no C or with attacks not run, and the
    End-PGD vs R+ rank agreement."""
    print(
        "| Model | Level | C | Vis [95% CI] | End [95% CI] | Typo [95% CI] | MANTIS [95% CI] | Nat [95% CI] | "
        "R0 [95% CI] | R+ [95% CI] | delta | RUG typo | OAR | OAR vs clean |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, row in report.models.items():
        f = row.figures
        with_ci = ("asr_vis_pgd", "asr_end_pgd", "asr_typo_evid", "asr_mantis", "asr_nat_evid", "r0", "r_plus")
        cells = [with_interval(f[k], row.intervals.get(k)) for k in with_ci]
        cells += [f"{f[k]:.3f}" if f[k] is not None else "-" for k in ("delta", "rug_typo", "oar")]
        increase = f["oar_increase"]
        cells.append("-" if increase is None else f"{increase:+.0%}")
        print(f"| {model} | {row.fusion_level} | {int(f['n_clean_correct'] or 0)} | {' | '.join(cells)} |")
    note = interval_note([row.intervals.get("r_plus") for row in report.models.values()])
    if note:
        print(note)
    empty = [model for model, row in report.models.items() if not row.figures["n_clean_correct"]]
    if empty:
        print(
            f"\nNote: {', '.join(empty)}: C = 0 (no clean item answered correctly), and every figure is a share "
            "of C, so its row is `-` and its bars in fusion_asr_rplus.png are n/a"
        )
    for model, row in report.models.items():
        if row.figures["n_clean_correct"] and row.attacks_not_run:
            print(
                f"Note: {model}: no outcome on C for {', '.join(row.attacks_not_run)}, shown as `-` (an attack "
                f"not run{_natevid_reason(row)})"
            )
    agreement = report.rank_agreement_end_pgd_vs_r_plus
    rho = agreement.spearman_rho
    print(
        f"\nEnd-PGD vs R+ ranks: Spearman rho {'-' if rho is None else f'{rho:.3f}'}; "
        f"{agreement.n_moved} of {agreement.n_models} models move >= 3 ranks"
    )


def _natevid_reason(row: ModelFigures) -> str:
    """The other reason Nat-Evid has no outcome: every edit of C failed the OCR evidence check."""
    if "nat_evid" not in row.attacks_not_run:
        return ""
    return "; for Nat-Evid also edits whose OCR check found the evidence destroyed, counted only with --natevid-all"


def _sweep(args: argparse.Namespace, run_dirs: list[Path], overrides: dict[str, str]) -> int:
    """``--sweep``: runs the grid, writes ``sweep.json`` and the plots, prints the summary."""
    from harness.protocols.fusion.attacks.pgd import PGDConfig
    from harness.protocols.fusion.attacks.run import ATTACKS, parse_fraction, parse_list
    from harness.protocols.fusion.sweep import SweepConfig, check_sweep, run_sweep, write_sweep

    try:
        config = SweepConfig(
            items=args.sweep_items,
            seeds=tuple(int(v) for v in names(args.sweep_seeds)),
            steps_grid=tuple(int(v) for v in names(args.sweep_steps)),
            eps_grid=tuple(parse_fraction(v) for v in names(args.sweep_eps)),
            attacks=parse_list(args.attacks, ATTACKS, "--attacks"),
            pgd=PGDConfig(eps=parse_fraction(args.eps), alpha=parse_fraction(args.alpha), steps=args.steps),
            batch_size=args.batch_size,
        )
    except ValueError as exc:
        raise HarnessError(f"--sweep-seeds and --sweep-steps take comma-separated integers ({exc})") from None
    check_sweep(config)
    out = audit_folder(args.output, run_dirs, "fusion_sweep")
    figures = run_sweep(run_dirs, config, overrides, data_dir(args), args.include_path or [], out)
    path = write_sweep(figures, out)
    for attack, row in figures["stability"].items():
        median = row["median_sd"]
        print(f"{attack}: median SD of ASR over seeds {'-' if median is None else f'{median:.3f}'}")
    print(f"\nsweep: {path}")
    return 0


ATTACK = Command("attack", "white-box pixel attacks (FusionAudit) on an hf model", _add_attack_arguments, _cmd_attack)
AUDIT = Command("fusion", "FusionAudit: ASR, R0, R+, delta, RUG, OAR, levels", _add_audit_arguments, _cmd_audit_fusion)
