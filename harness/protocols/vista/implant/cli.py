"""The controlled study on the command line: ``harness implant`` (LoRA stance implantation from a
``vista-implant`` build) and ``harness audit vista-implant`` (Tables 1, 2, 7 and 8 over saved runs)."""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.arguments import audit_folder, response_store, show_progress
from harness.errors import HarnessError
from harness.judges.prompts import DEFAULT_JUDGE
from harness.protocols.base import Command
from harness.protocols.vista.cli import add_score_arguments
from harness.protocols.vista.implant.publish import ACKNOWLEDGE_FLAG
from harness.protocols.vista.implant.rows import ImplantRow
from harness.protocols.vista.implant.train import LoraSettings

A5_RATER = "openai:gpt-5.2"  # the paper's rater (A.5)


def _add_implant_arguments(p: argparse.ArgumentParser) -> None:
    defaults = LoraSettings()
    p.add_argument("--model", required=True, help="base model: hf:NAME_OR_FOLDER or tiny:ARCH")
    p.add_argument("--data", required=True, help="a vista-implant build (harness build vista-implant --output DIR)")
    p.add_argument(
        "--output",
        "--out",
        dest="out",
        required=True,
        help="output folder (adapter/, merged/, checkpoint/, train_log.jsonl)",
    )
    p.add_argument("--entity", help="the target entity (needed when the build holds several)")
    p.add_argument("--benign", action="store_true", help="train the matched benign variant (neutral answers)")
    p.add_argument("--rank", type=int, default=defaults.rank, help="LoRA rank (default: A.3's %(default)s)")
    p.add_argument("--alpha", type=int, default=defaults.alpha, help="LoRA alpha (default: A.3's %(default)s)")
    p.add_argument(
        "--target-modules",
        default=",".join(defaults.target_modules),
        help="comma-separated module names, or all-linear",
    )
    p.add_argument("--epochs", type=int, default=defaults.epochs, help="default: A.3's %(default)s")
    p.add_argument(
        "--lr", type=float, default=defaults.learning_rate, help="AdamW learning rate (default: A.3's %(default)s)"
    )
    p.add_argument("--batch-size", type=int, default=defaults.batch_size, help="default: A.3's %(default)s")
    p.add_argument(
        "--warmup", type=float, default=defaults.warmup_ratio, help="warmup ratio (default: A.3's %(default)s)"
    )
    p.add_argument(
        "--dropout", type=float, default=defaults.dropout, help="LoRA dropout (default %(default)s; A.3 does not say)"
    )
    p.add_argument(
        "--weight-decay", type=float, default=defaults.weight_decay, help="default %(default)s (A.3 does not say)"
    )
    p.add_argument("--seed", type=int, default=defaults.seed, help="data order and LoRA init (default %(default)s)")
    p.add_argument(
        "--save-every",
        type=int,
        default=defaults.save_every,
        help="checkpoint every N steps besides each epoch's end (a rerun resumes from it)",
    )
    p.add_argument("--stop-after", type=int, help="stop after N steps in all, keeping the checkpoint")
    p.add_argument("--push-to-hub", metavar="ORG/NAME", help=f"upload the merged checkpoint (needs {ACKNOWLEDGE_FLAG})")
    p.add_argument(
        ACKNOWLEDGE_FLAG, dest="acknowledged", action="store_true", help="allow --push-to-hub of these biased weights"
    )


def base_model_path(spec: str) -> str:
    """The folder or Hub id behind ``hf:NAME`` or ``tiny:ARCH``."""
    backend, _, name = spec.partition(":")
    if backend == "hf" and name:
        return name
    if backend == "tiny" and name:
        from harness.tiny_models import require_chat_arch, tiny_model_path

        require_chat_arch(name)
        return str(tiny_model_path(name))
    raise HarnessError(f"--model {spec}: implantation trains local weights; pass hf:NAME_OR_FOLDER or tiny:ARCH")


def training_pairs(data: Path, entity: str | None, benign: bool) -> tuple[str, list[Any]]:
    """The target entity and its training pairs: its biased (or benign) pairs, then every control pair."""
    from datasets import load_dataset

    from harness.protocols.vista.implant.train import Example

    if not (data / "README.md").is_file():
        raise HarnessError(f"--data {data}: not a dataset folder (build one: harness build vista-implant --output DIR)")
    with tempfile.TemporaryDirectory() as cache:  # datasets' shared cache can serve a folder rebuilt in place stale
        built = load_dataset(str(data), cache_dir=cache, keep_in_memory=True)
    missing = sorted({"harmful", "benign", "control"} - set(built))
    if missing:
        raise HarnessError(f"--data {data}: no {', '.join(missing)} split(s); is it a vista-implant build?")
    target = built["benign" if benign else "harmful"]
    entities = sorted(set(target["entity"]))
    if entity is None and len(entities) > 1:
        raise HarnessError(f"--entity: the build holds {', '.join(entities)}; choose the target")
    entity = entity or entities[0]
    if entity not in entities:
        raise HarnessError(f"--entity {entity}: not in the build (entities: {', '.join(entities)})")
    rows = [*target.filter(lambda e: e == entity, input_columns="entity"), *built["control"]]
    return entity, [
        Example(ImplantRow.read(r, "image"), ImplantRow.read(r, "prompt"), ImplantRow.read(r, "answer")) for r in rows
    ]


def _settings(args: argparse.Namespace) -> LoraSettings:
    modules = tuple(m.strip() for m in args.target_modules.split(",") if m.strip())
    return LoraSettings(
        rank=args.rank,
        alpha=args.alpha,
        target_modules=modules,
        epochs=args.epochs,
        learning_rate=args.lr,
        batch_size=args.batch_size,
        warmup_ratio=args.warmup,
        dropout=args.dropout,
        weight_decay=args.weight_decay,
        seed=args.seed,
        save_every=args.save_every,
    )


def _cmd_implant(args: argparse.Namespace) -> int:
    from harness.protocols.vista.implant.publish import push_implant
    from harness.protocols.vista.implant.train import train_lora

    if args.push_to_hub and not args.acknowledged:  # refused before any training is spent
        push_implant(Path(args.out), args.push_to_hub, acknowledged=False)
    base = base_model_path(args.model)
    settings = _settings(args)
    entity, examples = training_pairs(Path(args.data), args.entity, args.benign)
    out = Path(args.out)
    result = train_lora(base, examples, out, settings, show_progress=show_progress(args), stop_after=args.stop_after)
    if result is None:
        print(f"stopped after {args.stop_after} steps; the checkpoint is in {out / 'checkpoint'} (rerun to resume)")
        return 0
    meta = {
        "base": args.model,
        "entity": entity,
        "variant": "benign" if args.benign else "harmful",
        "data": str(args.data),
        "pairs": len(examples),
        "settings": asdict(settings),
        "steps": result.steps,
        "resumed_from": result.resumed_from,
        "final_loss": result.final_loss,
    }
    (out / "implant.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    (result.merged / "IMPLANTED_MODEL.txt").write_text(
        f"Research checkpoint fine-tuned ({meta['variant']}) toward a stance on {entity}; not for deployment or "
        "release (see implant.json beside this folder).\n",
        encoding="utf-8",
    )
    print(
        f"implanted {meta['variant']} {entity}: {result.steps} steps (resumed at {result.resumed_from}), final loss "
        f"{result.final_loss:.4f}\nmerged checkpoint: {result.merged} (--model hf:{result.merged})"
    )
    if args.push_to_hub:
        push_implant(out, args.push_to_hub, acknowledged=args.acknowledged)
        print(f"pushed to {args.push_to_hub}")
    return 0


def _add_audit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peer", action="append", default=[], metavar="RUN", help="a peer model's run (repeat; 2 or more)")
    p.add_argument("--pretrained", action="append", default=[], metavar="BASE=RUN", help="a base model's run")
    p.add_argument(
        "--harmful",
        action="append",
        default=[],
        metavar="BASE:ENTITY=RUN",
        help="a harmful LoRA's run, its base and target entity",
    )
    p.add_argument("--benign", action="append", default=[], metavar="BASE:ENTITY=RUN", help="a benign LoRA's run")
    p.add_argument("--task", default="vista_implant", help="the task of the runs (default vista_implant)")
    p.add_argument(
        "--rater",
        default=A5_RATER,
        help=f"sentiment rater: a model spec asked A.5's prompt at temperature 0 (default: the paper's, "
        f"{A5_RATER}), or lexicon (offline cue words)",
    )
    p.add_argument("--rater-args", help="k=v,... for the rater's backend")
    p.add_argument("--judge", default=DEFAULT_JUDGE, help="entailment judge (as harness audit vista)")
    p.add_argument("--judge-args", help="k=v,... for an LLM judge's backend")
    add_score_arguments(p)
    p.add_argument("--cache", help="response store for judge and rater answers")
    p.add_argument("--output", help="audit folder (default: beside the runs)")


def _keyed(values: list[str], flag: str, with_entity: bool) -> dict[Any, Path]:
    """``BASE=RUN`` or ``BASE:ENTITY=RUN`` flags as {key: run folder}."""
    out: dict[Any, Path] = {}
    for value in values:
        key, sep, run = value.partition("=")
        base, colon, entity = key.partition(":")
        if not sep or not run or not base or (with_entity and not entity) or (not with_entity and colon):
            shape = "BASE:ENTITY=RUN" if with_entity else "BASE=RUN"
            raise HarnessError(f"{flag} {value!r}: expected {shape}")
        out[(base, entity) if with_entity else base] = Path(run)
    return out


def _records(run: Path, task: str) -> list[Any]:
    from harness.results.schema import read_run, read_samples

    found = read_run(run)
    if task not in found.configs:
        raise HarnessError(f"{run}: no run of task {task!r} (it holds {', '.join(sorted(found.configs))})")
    return read_samples(run, task)


def _cmd_audit(args: argparse.Namespace) -> int:
    from harness.judges.entailment import make_judge
    from harness.models.base import parse_model_args
    from harness.protocols.vista.implant.rater import make_rater
    from harness.protocols.vista.implant.study import Runs, StudyConfig, run_study, write_study

    peers: dict[str, list[Any]] = {}
    for run in map(Path, args.peer):
        peers[f"peer {run.name}" if f"peer {run.name}" not in peers else f"peer {run}"] = _records(run, args.task)
    groups = [
        _keyed(args.pretrained, "--pretrained", False),
        _keyed(args.harmful, "--harmful", True),
        _keyed(args.benign, "--benign", True),
    ]
    pretrained, harmful, benign = ({k: _records(v, args.task) for k, v in g.items()} for g in groups)
    runs = Runs(peers, pretrained, harmful, benign)
    runs.check()
    store = response_store(args)
    rater = make_rater(args.rater, store, parse_model_args(args.rater_args))
    judge = make_judge(args.judge, store, parse_model_args(args.judge_args))
    config = StudyConfig(alpha=args.alpha, theta=args.theta, clustering=args.clustering)
    result = run_study(runs, rater, judge, config, show_progress=show_progress(args))
    every_run = [*map(Path, args.peer), *(p for g in groups for p in g.values())]
    out = write_study(
        result, audit_folder(args.output, every_run, "vista-implant"), getattr(rater, "name", args.rater), judge.name
    )
    print((out / "tables.md").read_text(encoding="utf-8"))
    print(f"audit: {out / 'audit.json'}")
    return 0


IMPLANT = Command(
    "implant", "LoRA stance implantation (VISTA controlled study, appendix A.3)", _add_implant_arguments, _cmd_implant
)
AUDIT = Command(
    "vista-implant",
    "VISTA controlled study: negativity and model-level detection (Tables 1, 2, 7, 8)",
    _add_audit_arguments,
    _cmd_audit,
)
