"""The ``harness`` command line: eval, score, tasks, build, audit, submit, leaderboard."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import HarnessError
from harness.judges.prompts import DEFAULT_JUDGE

log = logging.getLogger("harness")


def _parse_gen_kwargs(text: str | None) -> dict[str, Any]:
    """``--gen-kwargs temperature=0.7,max_new_tokens=64`` with JSON-ish values."""
    from harness.models.base import parse_model_args

    out: dict[str, Any] = {}
    for key, value in parse_model_args(text).items():
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _default_store() -> Path:
    from harness.models.tiny import cache_root

    return cache_root() / "responses.sqlite"


def cmd_eval(args: argparse.Namespace) -> int:
    from harness.data import default_data_dir
    from harness.engine.report import summary_table
    from harness.engine.runner import EvalOptions, evaluate, require_tasks, validate_tasks
    from harness.models.base import create_backend, parse_model_args
    from harness.taskspec.registry import TaskRegistry

    tasks = require_tasks([t for t in (args.tasks or "").split(",") if t.strip()])
    model_args = parse_model_args(args.model_args)
    for flag, value in (("--repeats", args.repeats), ("--batch-size", args.batch_size), ("--limit", args.limit)):
        if value is not None and value < 1:
            raise HarnessError(f"{flag} must be at least 1, got {value}")
    opts = EvalOptions(
        tasks=tasks, include_paths=args.include_path or [],
        data_dir=Path(args.data_dir) if args.data_dir else default_data_dir(),
        limit=args.limit, seed=args.seed, batch_size=args.batch_size,
        output=Path(args.output) if args.output else None,
        store_path=Path(args.cache) if args.cache else _default_store(),
        use_cache=not args.no_cache, refresh=args.refresh, gen_overrides=_parse_gen_kwargs(args.gen_kwargs),
        repeats=args.repeats,
        show_progress=args.verbosity != "quiet",
    )
    datasets = validate_tasks(opts)
    registry = TaskRegistry.discover(opts.include_paths)
    # Protocol hooks read the typed task config (metadata normalised there), never the raw YAML.
    vista_tasks = [t for t in datasets if registry.get(t).harness_audit == "vista"]
    audited: dict[str, dict[str, list[Any]]] = {}  # cross-model audit task -> {model: samples}
    for spec in args.model:
        backend = create_backend(spec, model_args)
        run, samples, run_dir = evaluate(backend, spec, opts, model_args, datasets)
        del backend
        for task in vista_tasks:
            group = audited.setdefault(task, {})
            group[spec if spec not in group else f"{spec}#{len(group) + 1}"] = samples[task]
        print(f"\n{spec}")
        print(summary_table(run))
        stats = run.provenance["requests"]
        print(f"\n{stats['generated']} request(s) generated, {stats['cached']} from the response store; "
              f"wall time {run.provenance['wall_time_s']:.1f}s")
        if run_dir is not None:
            print(f"results: {run_dir / 'results.json'}")
        if all(c.scored == 0 for c in run.counts.values()) and any(c.samples for c in run.counts.values()):
            print("error: every sample failed; see the samples files for the per-sample errors", file=sys.stderr)
            return 1
    for task, records in audited.items():
        if len(records) < 2:
            print(f"\n{task}: one model evaluated; run `harness audit vista` over two or more runs for the "
                  "cross-model audit")
            continue
        _vista_audit(records, args, task, opts.output)
    return 0


def _vista_audit(records: dict[str, list[Any]], args: argparse.Namespace, task: str, output: Path | None) -> None:
    """Audit the models just evaluated, print the per-model table and write the audit beside the runs."""
    from datetime import UTC, datetime

    from harness.judges.entailment import make_judge
    from harness.protocols.vista.audit import AuditConfig, audit_records, write_audit

    judge = make_judge(args.judge, Path(args.cache) if args.cache else _default_store())
    result = audit_records(records, judge, AuditConfig(task=task), show_progress=args.verbosity != "quiet")
    print(f"\nVISTA audit of {task} ({len(records)} models, judge {getattr(judge, 'name', args.judge)})")
    _print_audit(result)
    if output is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        out = write_audit(result, output / f"audit-{task}-{stamp}", getattr(judge, "name", args.judge))
        print(f"audit: {out / 'audit.json'}")


def _print_audit(result: Any) -> None:
    print("| Model | Queries | Mean S | Max S | Flags | Pattern | Refusal | Detection |")
    print("|---|---|---|---|---|---|---|---|")
    for model, row in result.per_model.items():
        det = row["detection"]
        print(f"| {model} | {row['queries']} | {row['mean_suspicion']:.3f} | {row['max_suspicion']:.3f} | "
              f"{row['flags']} | {row['dominant_pattern'] or '-'} | {row['refusal_rate']:.2f} | "
              f"{'positive' if det['positive'] else 'negative'} ({det['score']:.3f}) |")
    cached = result.judge_decisions - result.judge_model_calls
    print(f"\njudge decisions: {result.judge_decisions} ({result.judge_model_calls} computed now, {cached} from the "
          f"cache; all pairs would be {result.all_pairs_calls}); skipped queries: {result.skipped_queries}")


def cmd_score(args: argparse.Namespace) -> int:
    from harness.engine.report import summary_table
    from harness.engine.runner import score_run

    run, _ = score_run(Path(args.run_dir), Path(args.data_dir) if args.data_dir else None,
                       Path(args.output) if args.output else None)
    print(summary_table(run))
    rescored = run.provenance["rescored"]
    if rescored["originals"] is None:
        print(f"\nwrote to {args.output}: {', '.join(rescored['files'])} (the run folder is unchanged)")
    else:
        print(f"\nrewrote in {args.run_dir}: {', '.join(rescored['files'])}; the run's files as first written "
              f"are kept in {rescored['originals']}")
    return 0


def _yaml_description(path: Path) -> str:
    """A task's description: the comment lines at the top of its YAML file (its docstring)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines) or "(no description: start the task's YAML with a # comment line)"


def cmd_tasks(args: argparse.Namespace) -> int:
    from builders import build_command, builder_for
    from harness.data import default_data_dir, resolve_path
    from harness.taskspec.registry import TaskRegistry

    registry = TaskRegistry.discover(args.include_path or [])
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    print(f"Tasks (datasets looked up in {data_dir}):")
    width = max((len(name) for name in registry.tasks), default=0)
    for name in registry.tasks:
        try:
            config = registry.get(name)
        except HarnessError as exc:
            print(f"warning: {exc}", file=sys.stderr)
            continue
        path, local = resolve_path(config.dataset_path or "", data_dir)
        builder = None if local or not config.dataset_path else builder_for(config.dataset_path)
        state = (f"local ({path})" if local else f"not local (build: {build_command(builder)})" if builder
                 else "not local (read from the Hub)")
        print(f"  {name:<{width}}  {_yaml_description(config.source)}")
        print(f"  {'':<{width}}  dataset {config.dataset_path}: {state}")
    if registry.groups:
        print("Groups:")
        for name, spec in sorted(registry.groups.items()):
            print(f"  {name}: {', '.join(spec.tasks)}")
    if registry.tags:
        print("Tags:")
        for name, members in sorted(registry.tags.items()):
            print(f"  {name}: {', '.join(members)}")
    for problem in registry.broken:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from builders import build_dataset

    options = {"font": args.font, "squad": args.squad, "workers": args.workers,
               "subsets": tuple(args.subsets.split(",")) if args.subsets else None,
               "admire": tuple(args.admire) if args.admire else None, "images": args.images,
               "humans": args.humans, "n": args.n, "generator": args.generator, "steps": args.steps,
               "guidance": args.guidance, "image_size": args.image_size, "reject": args.reject,
               "topics": tuple(args.topics.split(",")) if args.topics else None,
               "sources": args.sources, "per_source": args.per_source,
               "scene_graphs": args.scene_graphs, "detector": args.detector, "relation_model": args.relation_model,
               "max_candidates": args.max_candidates, "curation_out": args.curation_out,
               "curated": tuple(args.curated) if args.curated else None, "demo": args.demo,
               "editor": args.editor, "chartqa": args.chartqa, "docvqa": args.docvqa, "mme": args.mme}
    out = build_dataset(args.name, Path(args.out) if args.out else None, seed=args.seed,
                        push_to_hub=args.push_to_hub, **{k: v for k, v in options.items() if v is not None})
    print(f"built {args.name}: {out}")
    return 0


def cmd_attack(args: argparse.Namespace) -> int:
    from harness.data import default_data_dir
    from harness.engine.runner import EvalOptions, evaluate
    from harness.models.base import create_backend, parse_model_args
    from harness.protocols.fusion.attacks.pgd import PGDConfig
    from harness.protocols.fusion.attacks.preprocess import SUPPORTED
    from harness.protocols.fusion.attacks.run import (
        ATTACKS,
        DIAGNOSTICS,
        AttackOptions,
        clean_correct_items,
        parse_fraction,
        parse_list,
        run_attacks,
    )
    from harness.results.schema import read_run

    tasks = [t for t in (args.tasks or "").split(",") if t.strip()]
    if len(tasks) != 1:
        raise HarnessError("--tasks: name the one clean task to attack (e.g. fusion_clean)")
    pgd = PGDConfig(eps=parse_fraction(args.eps), alpha=parse_fraction(args.alpha), steps=args.steps,
                    noise_scale=args.noise_scale)
    if pgd.eps <= 0 or pgd.alpha <= 0 or pgd.steps < 0 or not 0 < pgd.noise_scale <= 1:
        raise HarnessError("need --eps > 0, --alpha > 0, --steps >= 0 and 0 < --noise-scale <= 1")
    if args.clean_run and len(args.model) > 1:
        raise HarnessError("--clean-run belongs to one model; attack one model at a time with it")
    diagnostics = () if args.diagnostics == "none" else parse_list(args.diagnostics, DIAGNOSTICS, "--diagnostics")
    opts = AttackOptions(attacks=parse_list(args.attacks, ATTACKS, "--attacks"), pgd=pgd, seed=args.seed,
                         batch_size=args.batch_size, diagnostics=diagnostics, task=tasks[0],
                         show_progress=args.verbosity != "quiet")
    model_args = parse_model_args(args.model_args)
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    for spec in args.model:
        backend = create_backend(spec, model_args)
        if getattr(backend, "model_type", None) not in SUPPORTED:
            raise HarnessError(f"{spec}: white-box attacks support the model types {', '.join(SUPPORTED)}, "
                               f"not {getattr(backend, 'model_type', type(backend).__name__)!r}")
        if args.clean_run:
            run_dir = Path(args.clean_run)
            saved = read_run(run_dir).provenance.get("model", {}).get("fingerprint")
            if saved != backend.fingerprint:
                raise HarnessError(f"{run_dir} was run with another model (fingerprint {saved}, this one "
                                   f"{backend.fingerprint})")
        else:
            eval_opts = EvalOptions(tasks=tasks, include_paths=args.include_path or [], data_dir=data_dir,
                                    seed=args.seed, batch_size=args.batch_size, limit=args.limit,
                                    output=Path(args.output), store_path=_default_store(),
                                    show_progress=opts.show_progress)
            _, _, run_dir = evaluate(backend, spec, eval_opts, model_args)
        items, params = clean_correct_items(run_dir, tasks[0], data_dir, args.include_path or [],
                                               backend.model_family)
        summary = run_attacks(backend, run_dir, items, params, opts)
        print(f"\n{spec}: clean-correct items |C| = {summary['n_clean_correct']}")
        print("| Attack | ASR | items/min |\n|---|---|---|")
        for attack in opts.attacks:
            value = summary["asr"][attack]
            print(f"| {attack} | {'-' if value is None else f'{value:.3f}'} | {summary['items_per_minute'][attack]} |")
        print(f"attack outcomes: {run_dir / 'attack_outcomes.jsonl'}")
    return 0


def cmd_audit_vista(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from harness.judges.entailment import make_judge
    from harness.models.base import parse_model_args
    from harness.protocols.vista.audit import AuditConfig, run_audit, write_audit

    run_dirs = [Path(d) for d in args.run_dirs]
    config = AuditConfig(task=args.task, alpha=args.alpha, theta=args.theta, clustering=args.clustering,
                         reference=args.reference, stability=not args.no_stability)
    prompt = Path(args.judge_prompt).read_text(encoding="utf-8") if args.judge_prompt else None
    judge = make_judge(args.judge, Path(args.cache) if args.cache else _default_store(),
                       parse_model_args(args.judge_args), prompt)
    result = run_audit(run_dirs, judge, config, show_progress=args.verbosity != "quiet")
    if result.skipped_runs:
        print(f"skipped {result.skipped_runs} run(s) without task {config.task!r}; auditing {len(result.models)}")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = write_audit(result, Path(args.output) if args.output else run_dirs[0].parent.parent / f"audit-vista-{stamp}",
                      getattr(judge, "name", args.judge))
    _print_audit(result)
    print(f"audit: {out / 'audit.json'}")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from harness.leaderboard.client import submit

    answer = submit(Path(args.run_dir), args.to, args.token)
    if "id" in answer:
        state = "already on the leaderboard" if answer["duplicate"] else "stored"
        print(f"submission {answer['id']}: {answer['status']} ({state}); {answer['page']}")
        for task, check in answer["checks"].items():
            if check["status"] != "verified":
                print(f"  {task}: {check['status']}: {check['message']}")
    else:
        print(f"written: {answer.get('folder') or answer.get('hub')}")
    return 0


def _leaderboard_settings(args: argparse.Namespace) -> Any:
    from harness.leaderboard.bundle import Limits
    from harness.leaderboard.service import Quota, Settings, VistaSettings

    return Settings(db_url=args.db, data_dir=Path(args.data_dir) if getattr(args, "data_dir", None) else None,
                    include_paths=tuple(getattr(args, "include_path", None) or ()),
                    on_mismatch=getattr(args, "on_mismatch", "flag"),
                    limits=Limits(max_total_bytes=int(getattr(args, "max_upload_mb", 64) * 2**20)),
                    vista=VistaSettings(task=getattr(args, "vista_task", "vista"),
                                        judge=getattr(args, "vista_judge", "embedding")),
                    rescore_timeout_s=getattr(args, "rescore_timeout", 120.0),
                    rescore_workers=getattr(args, "rescore_workers", 2),
                    quota=Quota(submissions_per_day=getattr(args, "quota_submissions", 50),
                                bytes_per_day=int(getattr(args, "quota_mb", 1024.0) * 2**20)))


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from harness.leaderboard.db import Database

    settings = _leaderboard_settings(args)
    if args.action == "serve":
        from harness.leaderboard.server import serve

        serve(settings, args.host, args.port)
        return 0
    db = Database(settings.db_url)
    if args.action == "token":
        from harness.leaderboard import tokens

        if args.token_action == "create":
            print(tokens.create_token(db, args.name))
            print(f"token for {args.name!r}: shown once; the server keeps only its hash", file=sys.stderr)
        elif args.token_action == "revoke":
            tokens.revoke_token(db, args.name)
            print(f"revoked {args.name!r}")
        else:
            for name, created, active in tokens.list_tokens(db):
                print(f"{name}\t{created}\t{'active' if active else 'revoked'}")
    elif args.action == "export":
        from harness.leaderboard.export import export_site

        print(f"static site: {export_site(db, Path(args.out), settings.vista.task) / 'index.html'}")
    elif args.action == "import":
        from harness.leaderboard.client import hub_runs
        from harness.leaderboard.service import import_runs

        refused = 0
        for run_dir, outcome in import_runs(db, hub_runs(Path(args.folder)), args.submitter, settings):
            if isinstance(outcome, Exception):
                refused += 1
                print(f"{run_dir}: refused: {outcome}", file=sys.stderr)
            else:
                note = " (already stored)" if outcome.duplicate else ""
                print(f"{run_dir}: submission {outcome.id} {outcome.status}{note}")
        return 1 if refused else 0
    return 0


def cmd_audit_diavlo(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from harness.data import default_data_dir
    from harness.engine.store import ResponseStore
    from harness.models.base import create_backend, parse_model_args
    from harness.protocols.diavlo.audit import DiavloAuditConfig, audit_run, summary_tables, write_audit
    from harness.protocols.diavlo.concept_effects import DMLSettings
    from harness.protocols.diavlo.metrics import Thresholds
    from harness.results.schema import read_run

    config = DiavloAuditConfig(
        thresholds=Thresholds(args.tau_a, args.tau_e, args.tau_d), concepts=args.concepts,
        max_subsets=args.max_subsets, match_threshold=args.match_threshold, mi_estimator=args.mi_estimator,
        mi_resamples=args.mi_resamples, seed=args.seed, batch_size=args.batch_size,
        dml=DMLSettings(n_folds=args.n_folds, n_rep=args.n_rep, n_estimators=args.n_estimators, seed=args.seed,
                        min_obs=args.min_obs, min_arm=args.min_arm))
    detector = None
    if args.detector:
        from harness.protocols.diavlo.detector import OpenVocabDetector

        detector = OpenVocabDetector(args.detector)
    store = ResponseStore(Path(args.cache) if args.cache else _default_store())
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    audits = []
    for run_dir in map(Path, args.run_dirs):
        run = read_run(run_dir)
        spec = args.model or str(run.config.get("model"))
        model_args = parse_model_args(args.model_args) if args.model_args else run.config.get("model_args", {})
        audits.append(audit_run(run_dir, create_backend(spec, model_args), config, store, data_dir, detector))
    store.close()
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    first = Path(args.run_dirs[0])
    out = write_audit(audits, config,
                      Path(args.output) if args.output else first.parent.parent / f"audit-diavlo-{stamp}")
    print(summary_tables(audits))
    print(f"\ncounterfactuals: {sum(a.counts['counterfactuals'] for a in audits)}; audit: {out / 'audit.json'}")
    return 0


def cmd_audit_fusion(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from harness.protocols.fusion.audit import FusionAuditConfig, run_fusion_audit, write_fusion_audit

    overrides = {}
    for pair in args.fusion_level or []:
        model, sep, level = pair.rpartition("=")
        if not sep or not model:
            raise HarnessError(f"--fusion-level expects MODEL=LEVEL, got {pair!r}")
        overrides[model] = level
    run_dirs = [Path(d) for d in args.run_dirs]
    config = FusionAuditConfig(delta_mode=args.delta_mode, natevid_preserved_only=not args.natevid_all,
                               level_overrides=overrides, n_resamples=args.resamples, seed=args.seed)
    result = run_fusion_audit(run_dirs, config)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = write_fusion_audit(result, Path(args.output) if args.output
                             else run_dirs[0].parent.parent / f"audit-fusion-{stamp}")
    print("| Model | Level | C | Vis | End | Typo | MANTIS | Nat | R0 | R+ | delta | RUG typo | OAR |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, row in result.models.items():
        f = row["figures"]
        cells = [f"{f[k]:.3f}" if f[k] is not None else "-" for k in (
            "asr_vis_pgd", "asr_end_pgd", "asr_typo_evid", "asr_mantis", "asr_nat_evid", "r0", "r_plus", "delta",
            "rug_typo", "oar")]
        print(f"| {model} | {row['fusion_level']} | {int(f['n_clean_correct'])} | {' | '.join(cells)} |")
    print(f"\naudit: {out / 'audit.json'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--verbosity", choices=["quiet", "info", "debug"], default=argparse.SUPPRESS,
                        help="debug shows tracebacks; quiet hides progress bars")
    parser = argparse.ArgumentParser(prog="harness", parents=[common],
                                     description="Audit vision-language models with published protocols.")
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", parents=[common], help="run tasks on one or more models")
    ev.add_argument("--model", action="append", required=True,
                    help="BACKEND:NAME, e.g. hf:Qwen/Qwen2-VL-7B-Instruct or tiny:qwen2_vl (repeatable)")
    ev.add_argument("--model-args", help="k=v,... passed to the backend (dtype, device, attn_implementation, ...)")
    ev.add_argument("--tasks", required=True, help="comma-separated task, group or tag names")
    ev.add_argument("--output", help="folder for results (one sub-folder per model and run)")
    ev.add_argument("--limit", type=int, help="evaluate only the first N docs of each task")
    ev.add_argument("--seed", type=int, default=0, help="base seed; each request derives its own seed from it")
    ev.add_argument("--batch-size", type=int, default=1)
    ev.add_argument("--gen-kwargs", help="override generation settings, e.g. temperature=0.7,max_new_tokens=64")
    ev.add_argument("--repeats", type=int, help="answer every prompt N times (overrides the tasks' repeats)")
    ev.add_argument("--include-path", action="append", help="extra task folder (repeatable)")
    ev.add_argument("--data-dir", help="folder holding local dataset copies as DIR/org/name (env HARNESS_DATA_DIR)")
    ev.add_argument("--cache", help="response store file (default ~/.cache/harness/responses.sqlite)")
    ev.add_argument("--no-cache", action="store_true", help="neither read nor write the response store")
    ev.add_argument("--refresh", action="store_true", help="regenerate everything and overwrite the store")
    ev.add_argument("--judge", default=DEFAULT_JUDGE,
                    help="entailment judge of the cross-model audit that follows a multi-model vista eval "
                    f"(default: the VISTA paper's, {DEFAULT_JUDGE}; offline: embedding or nli:MODEL)")
    ev.set_defaults(func=cmd_eval)

    sc = sub.add_parser("score", parents=[common], help="recompute all metrics of a run folder from its samples")
    sc.add_argument("run_dir")
    sc.add_argument("--data-dir", help="needed only for tasks whose scoring reads images")
    sc.add_argument("--output", help="write the rescored files to this folder instead of rewriting the run "
                    "(in place, the run's first files are kept in RUN_DIR/original/)")
    sc.set_defaults(func=cmd_score)

    au = sub.add_parser("audit", parents=[common], help="protocol audits over saved runs")
    audits = au.add_subparsers(dest="protocol", required=True)
    va = audits.add_parser("vista", parents=[common], help="cross-model semantic-divergence audit")
    va.add_argument("run_dirs", nargs="+", help="run folders (one per model) written by harness eval")
    va.add_argument("--task", default="vista", help="the task whose samples are pooled (default vista)")
    va.add_argument("--judge", default=DEFAULT_JUDGE,
                    help="entailment judge: a model spec asked the paper's A.2 question (default: the VISTA paper's, "
                    f"{DEFAULT_JUDGE}), embedding[:threshold] (offline cosine) or nli:MODEL (cross-encoder)")
    va.add_argument("--judge-args", help="k=v,... for an LLM judge's backend")
    va.add_argument("--judge-prompt", help="file with the LLM judge's Yes/No question ({premise}, {hypothesis})")
    va.add_argument("--no-stability", action="store_true", help="skip the leave-one-peer-out re-clustering")
    va.add_argument("--alpha", type=float, default=0.5)
    va.add_argument("--theta", type=float, default=0.6)
    va.add_argument("--clustering", choices=["components", "strict"], default="components")
    va.add_argument("--reference", choices=["all", "peers"], default="all")
    va.add_argument("--cache", help="response store for judge decisions")
    va.add_argument("--output", help="audit folder (default: beside the runs)")
    va.set_defaults(func=cmd_audit_vista)

    dv = audits.add_parser("diavlo", parents=[common], help="DiaVLo classes, MI and concept effects (DML)")
    dv.add_argument("run_dirs", nargs="+", help="run folders of diavlo_<source> tasks (one per model)")
    dv.add_argument("--model", help="model spec for the counterfactual re-runs (default: each run's own)")
    dv.add_argument("--model-args", help="k=v,... for that model (default: each run's own)")
    dv.add_argument("--detector", help="boxes for RK concepts no SK concept matches: hf:ID_OR_FOLDER or tiny:owlv2")
    dv.add_argument("--concepts", choices=["rk", "rk_or_sk"], default="rk",
                    help="occlude RK concepts, or fall back to SK concepts when a pair has no usable RK")
    dv.add_argument("--max-subsets", type=int, default=16, help="occlusion designs per pair (powerset cap)")
    dv.add_argument("--match-threshold", type=float, default=0.6, help="RK-SK concept cosine to borrow a box")
    dv.add_argument("--tau-a", type=float, default=0.75)
    dv.add_argument("--tau-e", type=float, default=0.35)
    dv.add_argument("--tau-d", type=float, default=0.35)
    dv.add_argument("--mi-estimator", choices=["knn", "binned"], default="knn")
    dv.add_argument("--mi-resamples", type=int, default=1000)
    dv.add_argument("--n-folds", type=int, default=3)
    dv.add_argument("--n-rep", type=int, default=5, help="repeated random sample splits (median taken)")
    dv.add_argument("--n-estimators", type=int, default=60, help="trees of each gradient-boosted nuisance")
    dv.add_argument("--min-obs", type=int, default=20, help="fewer counterfactual rows: inconclusive")
    dv.add_argument("--min-arm", type=int, default=5, help="fewer occluded or non-occluded rows: inconclusive")
    dv.add_argument("--seed", type=int, default=0)
    dv.add_argument("--batch-size", type=int, default=1)
    dv.add_argument("--data-dir", help="where the diavlo dataset is (default: the data dir)")
    dv.add_argument("--cache", help="response store (default ~/.cache/harness/responses.sqlite)")
    dv.add_argument("--output", help="audit folder (default: beside the runs)")
    dv.set_defaults(func=cmd_audit_diavlo)

    at = sub.add_parser("attack", parents=[common], help="white-box pixel attacks (FusionAudit) on an hf model")
    at.add_argument("--model", action="append", required=True, help="hf:NAME or tiny:ARCH (repeatable)")
    at.add_argument("--model-args", help="k=v,... for the backend (dtype, device, attn_implementation, ...)")
    at.add_argument("--tasks", default="fusion_clean", help="the clean task whose correct items are attacked")
    at.add_argument("--attacks", default="vis_pgd,end_pgd,mantis", help="comma-separated: vis_pgd,end_pgd,mantis")
    at.add_argument("--eps", default="8/255", help="L-infinity radius in [0,1] pixels (default 8/255)")
    at.add_argument("--alpha", default="1/255", help="PGD step size (default 1/255)")
    at.add_argument("--steps", type=int, default=40)
    at.add_argument("--noise-scale", type=float, default=1.0,
                    help="below 1: perturb a downscaled noise field and upsample it (memory fallback)")
    at.add_argument("--seed", type=int, default=0)
    at.add_argument("--batch-size", type=int, default=4)
    at.add_argument("--limit", type=int, help="run the clean task on the first N docs only")
    at.add_argument("--diagnostics", default="oar,restoration", help="oar,restoration or none")
    at.add_argument("--clean-run", help="a saved run folder of the clean task (else the task is run first)")
    at.add_argument("--output", default="runs", help="folder for the run (when the clean task is run here)")
    at.add_argument("--data-dir", help="folder holding local dataset copies as DIR/org/name")
    at.add_argument("--include-path", action="append", help="extra task folder (repeatable)")
    at.set_defaults(func=cmd_attack)

    fu = audits.add_parser("fusion", parents=[common], help="FusionAudit: ASR, R0, R+, delta, RUG, OAR, levels")
    fu.add_argument("run_dirs", nargs="+", help="run folders of harness eval (fusion tasks) and harness attack")
    fu.add_argument("--fusion-level", action="append", help="MODEL=L1|L2|L3 overriding the table (repeatable)")
    fu.add_argument("--delta-mode", choices=["pathway", "suite"], default="pathway",
                    help="baselines of a strengthened attack: its own pathway's (default) or the whole suite")
    fu.add_argument("--natevid-all", action="store_true",
                    help="count Nat-Evid flips on edits whose OCR check found the evidence destroyed")
    fu.add_argument("--resamples", type=int, default=1000, help="paired bootstrap resamples (default 1000)")
    fu.add_argument("--seed", type=int, default=0)
    fu.add_argument("--output", help="audit folder (default: beside the runs)")
    fu.set_defaults(func=cmd_audit_fusion)

    ts = sub.add_parser("tasks", parents=[common],
                        help="list tasks (description, dataset, whether it is local), groups and tags")
    ts.add_argument("--include-path", action="append")
    ts.add_argument("--data-dir", help="where local dataset copies are (default: the data dir)")
    ts.set_defaults(func=cmd_tasks)

    from builders import builders_help

    bd = sub.add_parser("build", parents=[common], help="build a dataset (and optionally push it to the Hub)",
                        description="Build a dataset into the data dir, where harness eval looks for it.",
                        epilog=f"builders:\n{builders_help()}\n\nan extra installs a builder's optional "
                        'dependencies: pip install "vlm-audit-harness[EXTRA]"',
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    bd.add_argument("name", help="the builder (listed below)")
    bd.add_argument("--out", help="output folder (default: the data dir, where eval looks)")
    bd.add_argument("--seed", type=int, help="selection / rendering seed (default: the builder's own)")
    bd.add_argument("--push-to-hub", metavar="ORG/NAME")
    bd.add_argument("--font", help="font file to render with (default: found in installed packages)")
    bd.add_argument("--squad", help="SQuAD source for stealth's vqa subset: Hub id, folder or file")
    bd.add_argument("--subsets", help="comma-separated subsets to build (stealth: short,long,vqa,ocr)")
    bd.add_argument("--workers", type=int, help="rendering processes (default: all cores)")
    bd.add_argument("--admire", action="append", help="mist: AdMIRe-format rows (TSV/CSV or folder; repeatable)")
    bd.add_argument("--images", help="mist: folder with the AdMIRe image files; vista: folder with one sub-folder "
                    "of photographs per topic slug (topics without one are generated)")
    bd.add_argument("--humans", help="mist: human annotations (JSON list or CSV)")
    bd.add_argument("--n", type=int, help="mist: number of items to sample (default 200)")
    bd.add_argument("--generator", help="vista: diffusers text-to-image model (default stabilityai/sdxl-turbo; "
                    "tiny:sdxl_turbo offline; none: photographs only)")
    bd.add_argument("--steps", type=int, help="vista: denoising steps (default 4)")
    bd.add_argument("--guidance", type=float, help="vista: guidance scale (default 0.0)")
    bd.add_argument("--image-size", type=int, help="vista: generated image side in pixels (default: the model's)")
    bd.add_argument("--reject", help="vista: file of image ids to replace (one per line)")
    bd.add_argument("--topics", help="vista: comma-separated topic slugs to build (default all 19)")
    bd.add_argument("--sources", help="diavlo: NAME=PATH,... (llava_bench, mmbench, seed_bench2, vqav2)")
    bd.add_argument("--per-source", type=int,
                    help="diavlo: pairs per source (default: all); fusionaudit: items per source (default 500)")
    bd.add_argument("--scene-graphs", help="diavlo: scene-graph annotations (Visual Genome relationships.json)")
    bd.add_argument("--detector", help="diavlo: open-vocabulary detector, hf:ID_OR_FOLDER or tiny:owlv2")
    bd.add_argument("--relation-model", help="diavlo: VLM proposing triplets for the detector, e.g. hf:MODEL")
    bd.add_argument("--max-candidates", type=int, help="diavlo: candidate triplets kept per pair (default 8)")
    bd.add_argument("--curation-out", help="diavlo: write Label Studio verification/expansion tasks here")
    bd.add_argument("--curated", action="append", help="diavlo: Label Studio JSON export to import (repeatable)")
    bd.add_argument("--demo", action="store_true", default=None, help="mist, fusionaudit, diavlo: self-made source")
    bd.add_argument("--editor", help="fusionaudit: Nat-Evid editor MODEL[,steps=20,...], tiny, or none")
    for src in ("chartqa", "docvqa", "mme"):
        bd.add_argument(f"--{src}", help=f"fusionaudit: {src} source (Hub id, folder or JSON file)")
    bd.set_defaults(func=cmd_build)

    sm = sub.add_parser("submit", parents=[common], help="send a run to a leaderboard (server, Hub repo or folder)")
    sm.add_argument("run_dir")
    sm.add_argument("--to", required=True,
                    help="http(s)://HOST[:PORT] (a leaderboard server), hf://datasets/ORG/NAME, or a local folder")
    sm.add_argument("--token", help="submitter token for a server (env HARNESS_LEADERBOARD_TOKEN) or Hub token")
    sm.set_defaults(func=cmd_submit)

    lb = sub.add_parser("leaderboard", parents=[common], help="run, administer and export the leaderboard")
    lb_actions = lb.add_subparsers(dest="action", required=True)
    db_help = "database URL (default sqlite:///$HARNESS_CACHE/leaderboard.sqlite; postgresql+psycopg://...)"
    sv = lb_actions.add_parser("serve", parents=[common], help="the web service")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--rescore-timeout", type=float, default=120.0,
                    help="seconds one submission may take to re-score; past it, it is stored unverifiable (timeout)")
    sv.add_argument("--rescore-workers", type=int, default=2, help="submissions re-scored at once (processes)")
    sv.add_argument("--quota-submissions", type=int, default=50, help="submissions one token may store per 24 h")
    sv.add_argument("--quota-mb", type=float, default=1024.0, help="MB of files one token may store per 24 h")
    for action in (sv, lb_actions.add_parser("import", parents=[common],
                                             help="ingest a Hub-layout folder (runs/<model>/<hash>/)")):
        action.add_argument("--db", help=db_help)
        action.add_argument("--data-dir", help="local dataset copies: docs are checked against them, and tasks "
                                               "whose scoring reads images can be re-scored")
        action.add_argument("--include-path", action="append", help="extra task folder the server scores")
        action.add_argument("--on-mismatch", choices=["flag", "refuse"], default="flag",
                            help="flag (store and mark) or refuse a run whose claimed figures differ")
        action.add_argument("--max-upload-mb", type=float, default=64.0)
        action.add_argument("--vista-task", default="vista", help="the task whose samples form the VISTA pool")
        action.add_argument("--vista-judge", default="embedding", help="the pool audit's entailment judge")
        action.set_defaults(func=cmd_leaderboard)
    lb_actions.choices["import"].add_argument("folder")
    lb_actions.choices["import"].add_argument("--submitter", default="hub import")
    tk = lb_actions.add_parser("token", parents=[common], help="submitter tokens")
    tk_actions = tk.add_subparsers(dest="token_action", required=True)
    for name, text in (("create", "create a token for NAME (printed once)"), ("revoke", "revoke NAME's token"),
                       ("list", "list tokens")):
        action = tk_actions.add_parser(name, parents=[common], help=text)
        if name != "list":
            action.add_argument("name")
        action.add_argument("--db", help=db_help)
        action.set_defaults(func=cmd_leaderboard)
    ex = lb_actions.add_parser("export", parents=[common], help="write a static copy of the site")
    ex.add_argument("--out", required=True)
    ex.add_argument("--db", help=db_help)
    ex.add_argument("--vista-task", default="vista")
    ex.set_defaults(func=cmd_leaderboard)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.verbosity = getattr(args, "verbosity", "info")
    level = {"quiet": logging.ERROR, "info": logging.WARNING, "debug": logging.DEBUG}[args.verbosity]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.verbosity != "debug":
        _quiet_libraries()
    try:
        return args.func(args)
    except (HarnessError, ModuleNotFoundError) as exc:
        from harness.extras import missing_extra

        error = missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else exc
        if error is None or args.verbosity == "debug":
            raise
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished requests are in the response store; rerun the same command to resume",
              file=sys.stderr)
        return 130


def _quiet_libraries() -> None:
    import os

    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # also silences transformers' loading bars
    for name in ("transformers", "datasets", "huggingface_hub", "filelock", "diffusers"):
        logging.getLogger(name).setLevel(logging.ERROR)


if __name__ == "__main__":
    sys.exit(main())
