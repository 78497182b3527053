"""``harness eval``: run tasks on one or more models, then each protocol's after-eval hook."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builders import build_hint
from harness.arguments import data_dir, names, response_store, show_progress
from harness.cli.common import parse_gen_kwargs
from harness.cli.lmms_spelling import ALIASES
from harness.cli.tasks import list_tasks
from harness.engine.distributed import add_ray_arguments
from harness.engine.limits import parse_limit
from harness.errors import HarnessError
from harness.protocols.base import EvalOutcome, EvalSettings, FlagValue, Protocol, check_audit_tag, protocols

if TYPE_CHECKING:
    from harness.engine.runner import EvalOptions
    from harness.results.schema import RunResults, SampleRecord
    from harness.taskspec.registry import TaskRegistry


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness eval`` and its options: the models, the tasks, the run and cache settings."""
    ev = sub.add_parser(
        "eval",
        parents=[common],
        help="run tasks on one or more models",
        epilog="lmms-eval's spellings are read too: "
        + ", ".join(f"{k} as {v}" for k, v in ALIASES.items())
        + "; --log_samples is always on; --tasks list lists the tasks",
    )
    ev.add_argument(
        "--model",
        action="append",
        help="BACKEND:NAME, e.g. hf:Qwen/Qwen2-VL-7B-Instruct or tiny:qwen2_vl (repeatable; required)",
    )
    ev.add_argument("--model-args", help="k=v,... passed to the backend (dtype, device, attn_implementation, ...)")
    ev.add_argument(
        "--tasks", required=True, help="comma-separated task, group or tag names; 'list' lists them (harness tasks)"
    )
    ev.add_argument("--output", help="folder for results (one sub-folder per model and run)")
    ev.add_argument(
        "--limit",
        type=parse_limit,
        help="evaluate only the first N docs of each task, or with a fraction below 1 that share of each "
        "task's docs, rounded up (as lmms-eval reads it)",
    )
    ev.add_argument("--seed", type=int, default=0, help="base seed; each request derives its own seed from it")
    ev.add_argument("--batch-size", type=int, default=1, help="requests per call of a local model (default 1)")
    ev.add_argument("--gen-kwargs", help="override generation settings, e.g. temperature=0.7,max_new_tokens=64")
    ev.add_argument("--repeats", type=int, help="answer every prompt N times (overrides the tasks' repeats)")
    ev.add_argument(
        "--baseline",
        metavar="RUN_OR_FILE",
        help="compare each task with a stored run (a run folder, or an lmms-eval samples file) on the same docs: "
        "lmms-eval's paired t-test and power analysis",
    )
    ev.add_argument("--include-path", action="append", help="extra task folder (repeatable)")
    ev.add_argument(
        "--lmms-model",
        metavar="NAME",
        help="reproduce lmms-eval's model class NAME (llava_hf, qwen2_vl, gemma3, ...): its prompt "
        "blocks, default answer length and stop handling; the run records the defaults applied",
    )
    ev.add_argument("--data-dir", help="folder holding local dataset copies as DIR/org/name (env HARNESS_DATA_DIR)")
    ev.add_argument("--cache", help="response store file (default ~/.cache/harness/responses.sqlite)")
    ev.add_argument("--no-cache", action="store_true", help="neither read nor write the response store")
    ev.add_argument("--refresh", action="store_true", help="regenerate everything and overwrite the store")
    add_ray_arguments(ev)
    flags: dict[str, tuple[str, ...]] = {}  # protocol -> the dests of the flags its eval_arguments added
    for protocol in protocols():
        if protocol.after_eval is not None and protocol.eval_arguments is not None:
            group = ev.add_argument_group(f"{protocol.name} (after the models have run)")
            protocol.eval_arguments(group)
            flags[protocol.name] = tuple(a.dest for a in group._group_actions)  # argparse's only record of them
    ev.set_defaults(func=_cmd_eval, protocol_flags=flags)


def eval_options(args: argparse.Namespace) -> EvalOptions:
    """The engine's options from the command line (bad counts refused before anything loads)."""
    from harness.engine.runner import EvalOptions, require_tasks

    tasks = require_tasks(names(args.tasks))
    for flag, value in (("--repeats", args.repeats), ("--batch-size", args.batch_size)):
        if value is not None and value < 1:
            raise HarnessError(f"{flag} must be at least 1, got {value}")
    return EvalOptions(
        tasks=tasks,
        include_paths=args.include_path or [],
        data_dir=data_dir(args),
        limit=args.limit,
        seed=args.seed,
        batch_size=args.batch_size,
        output=Path(args.output) if args.output else None,
        store_path=response_store(args),
        use_cache=not args.no_cache,
        refresh=args.refresh,
        gen_overrides=parse_gen_kwargs(args.gen_kwargs),
        repeats=args.repeats,
        show_progress=show_progress(args),
        lmms_model=args.lmms_model,
        baseline=args.baseline,
        build_hint=build_hint,
    )


def eval_settings(args: argparse.Namespace, opts: EvalOptions, protocol: Protocol) -> EvalSettings:
    """What ``protocol``'s eval hooks see of the command line: its models, the run's options and the values
    of its own flags, converted from the Namespace here so that no hook reads one."""
    dests = args.protocol_flags.get(protocol.name, ())
    return EvalSettings(tuple(args.model), opts, {d: _flag_value(getattr(args, d)) for d in dests})


def _flag_value(value: object) -> FlagValue:
    """A parsed flag value as a ``FlagValue``: a repeatable flag's list becomes a tuple of text, and a value of
    any other type (a ``type=Path`` flag's) its text."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return str(value)


def _cmd_eval(args: argparse.Namespace) -> int:
    """Evaluates the tasks on each ``--model`` in turn (status 1 as soon as one model's samples all failed),
    then hands each hooked protocol its tasks' samples of every model."""
    from harness.engine.distributed import model_backend, ray_options
    from harness.engine.lmms_models import reproduce_hint
    from harness.engine.preflight import preflight
    from harness.engine.runner import evaluate
    from harness.models.base import parse_model_args
    from harness.taskspec.registry import TaskRegistry

    if args.tasks == "list":
        return list_tasks(args)
    if not args.model:
        raise HarnessError("harness eval needs --model BACKEND:NAME (repeatable), e.g. --model tiny:qwen2_vl")
    opts = eval_options(args)
    ray = ray_options(args.ray, args.workers, args.worker_cpus, args.worker_gpus)
    model_args = parse_model_args(args.model_args)
    datasets, plan = preflight(args.model, model_args, opts)
    _say(opts, plan.describe())
    registry = TaskRegistry.discover(opts.include_paths)
    hooked = _hooked_tasks(registry, list(datasets))
    settings = {protocol.name: eval_settings(args, opts, protocol) for protocol, tasks in hooked if tasks}
    for protocol, tasks in hooked:
        if tasks and protocol.check_eval is not None:
            protocol.check_eval(settings[protocol.name])
    collected: dict[str, dict[str, list[SampleRecord]]] = {}  # hooked task -> {model: samples}
    for spec in args.model:
        spec_args = lmms_model_args(spec, model_args, opts.lmms_model)
        _say(opts, f"loading {spec} ...")
        loading = time.monotonic()
        with model_backend(spec, spec_args, ray) as backend:
            _say(opts, f"loaded {spec} in {time.monotonic() - loading:.1f} s")
            hint = reproduce_hint([registry.get(t) for t in datasets], backend.model_family, opts.lmms_model)
            if hint is not None:
                print(hint, file=sys.stderr)
            result, samples, run_dir = evaluate(backend, spec, opts, spec_args, datasets)
        del backend  # free this model before the next one loads
        for task in {t for _, tasks in hooked for t in tasks}:
            group = collected.setdefault(task, {})
            group[spec if spec not in group else f"{spec}#{len(group) + 1}"] = samples[task]
        if not _report(spec, result, run_dir, opts):
            return 1
    for protocol, tasks in hooked:
        if tasks and protocol.after_eval is not None:
            protocol.after_eval(EvalOutcome({t: collected[t] for t in tasks}, settings[protocol.name]))
    return 0


def _say(opts: EvalOptions, line: str) -> None:
    """A status line on stderr (as the progress bars: not at ``--verbosity quiet``)."""
    if opts.show_progress:
        print(line, file=sys.stderr, flush=True)


def lmms_model_args(spec: str, model_args: dict[str, str], lmms_model: str | None) -> dict[str, str]:
    """``--model-args`` for one model: under ``--lmms-model``, a transformers model (``hf:``, ``tiny:``) keeps
    a trailing cut-off character as U+FFFD, as lmms-eval's transformers model classes decode it, unless
    ``cut_characters`` is given."""
    if lmms_model is None or "cut_characters" in model_args or spec.split(":", 1)[0] not in {"hf", "tiny"}:
        return model_args
    return {**model_args, "cut_characters": "keep"}


def not_saved(opts: EvalOptions) -> str:
    """The line that says a run without ``--output`` wrote no files, and what of it can be had again."""
    if not opts.use_cache:
        return "results: not saved (no --output; with --no-cache the answers were not stored either)"
    return (
        f"results: not saved (no --output); the answers are in the response store {opts.store_path}, so the "
        "same command with --output DIR writes the run without generating again"
    )


def _hooked_tasks(registry: TaskRegistry, tasks: list[str]) -> list[tuple[Protocol, list[str]]]:
    """Each protocol with an after-eval hook, and the run's tasks whose typed config names its audit tag
    (a task naming an unknown tag is refused here, before any model loads)."""
    for task in tasks:
        check_audit_tag(registry.get(task))
    return [
        (p, [t for t in tasks if registry.get(t).harness_audit == p.audit_tag])
        for p in protocols()
        if p.after_eval is not None and p.audit_tag is not None
    ]


def _report(spec: str, result: RunResults, run_dir: Path | None, opts: EvalOptions) -> bool:
    """Print one model's summary and where its results went; False when every sample of the run failed."""
    from harness.engine.report import summary_table

    print(f"\n{spec}")
    print(summary_table(result, run_dir))
    stats = result.provenance.requests
    print(
        f"\n{stats.generated} request(s) generated, {stats.cached} from the response store; "
        f"wall time {result.provenance.wall_time_s or 0:.1f}s"
    )
    print(f"results: {run_dir / 'results.json'}" if run_dir is not None else not_saved(opts))
    if all(c.scored == 0 for c in result.counts.values()) and any(c.samples for c in result.counts.values()):
        print("error: every sample failed; see the samples files for the per-sample errors", file=sys.stderr)
        return False
    return True
