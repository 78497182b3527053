"""Wall time and GPU-hours of each protocol at paper scale on 1, 4 and 32 GPUs, from measured throughput.

The model (every figure below is printed with the table, so a plan states what it assumed):

- Generation: a protocol's work is completions x mean generated tokens per completion, per model; a GPU
  generates ``--decode-tps`` tokens/s (vLLM's aggregate output throughput for one 7B-class VLM at full
  batch; measure it on the real model, e.g. ``benchmarks/gpu_check.sh`` with ``MODEL=...``). Prompt
  processing is counted as ``--prefill-share`` extra time (image tokens dominate a VLM prompt).
- White-box attacks (FusionAudit's PGD): ``--pgd-step-s`` seconds per step per item on one GPU (a forward
  and a backward pass through the whole model); attacks run through hf:, one item per GPU at a time.
- Scaling: models and request shards spread over the GPUs as data-parallel ranks (``vllm:`` with
  ``data_parallel_size``, or Ray); a run on G GPUs takes compute / (G x ``--efficiency``) plus a model load
  (``--load-s``) for every round of models a GPU must hold in turn. GPU-hours are wall time x G: what is
  paid for, idle tails included.

Sizes come from the papers (shared/seeds); the mean generated tokens are assumptions, stated per protocol.

Usage: python benchmarks/scale_plan.py [--decode-tps 2500] [--gpu-check-log gpu_check.log] [--gpus 1 4 32]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Workload:
    """One protocol at paper scale."""

    protocol: str
    models: int
    completions_per_model: int
    mean_tokens: int
    pgd_item_steps_per_model: int = 0
    source: str = ""


WORKLOADS = [
    Workload(
        "VISTA", 6, 1_900 * 10, 600, source="6 models x 1,900 queries x k=10, up to 1,000 tokens (mean 600 assumed)"
    ),
    Workload(
        "Stealth",
        4,
        2 * 100 * 37 + 100 * 18,
        16,
        source="4 VLMs; 2 sentiment sets x 100 sentences x 37 colour conditions + 100 SQuAD items x "
        "(6 global + 12 saliency contrast conditions); labels and short answers (16 tokens)",
    ),
    Workload(
        "MIST",
        9,
        200 * 20,
        128,
        source="13 judges (9 open-weight on GPUs) x 200 items x 20 labels = 52,000 labels; mean 128 "
        "tokens (chain-of-thought arms are long, zero-shot labels short)",
    ),
    Workload(
        "DiaVLo", 4, 1_996, 256, source="4 VLMs x 1,996 samples (REALLY-KNOW extraction, mean 256 tokens assumed)"
    ),
    Workload(
        "FusionAudit",
        18,
        1_500 * 2,
        64,
        pgd_item_steps_per_model=1_500 * 2 * 40,
        source="18 VLMs x 1,500 items; 2 pixel attacks (Vis-PGD, End-PGD) x 40 PGD steps; "
        "answers to clean and attacked images (64 tokens)",
    ),
]


def gpu_check_tps(log: Path) -> float:
    """The vLLM harness throughput that benchmarks/gpu_check.sh printed (``RESULT vllm_harness_tps=...``)."""
    match = re.search(r"RESULT vllm_harness_tps=([0-9.]+)", log.read_text())
    if match is None:
        raise SystemExit(f"{log}: no 'RESULT vllm_harness_tps=' line (run benchmarks/gpu_check.sh first)")
    return float(match.group(1))


@dataclass(frozen=True)
class Assumptions:
    """The throughput and overheads the plan is computed from (``parse``: flags over the defaults)."""

    decode_tps: float
    prefill_share: float
    pgd_step_s: float
    efficiency: float
    load_s: float
    gpus: tuple[int, ...]


def compute_gpu_s(w: Workload, args: Assumptions) -> float:
    """GPU-seconds of useful work over all of a protocol's models."""
    generate = w.completions_per_model * w.mean_tokens / args.decode_tps * (1 + args.prefill_share)
    attack = w.pgd_item_steps_per_model * args.pgd_step_s
    return w.models * (generate + attack)


def wall_s(w: Workload, gpus: int, args: Assumptions) -> float:
    """Wall time on ``gpus`` GPUs: compute spread with the given efficiency, plus the model loads in turn."""
    efficiency = 1.0 if gpus == 1 else args.efficiency
    load_rounds = math.ceil(w.models / gpus)
    return compute_gpu_s(w, args) / (gpus * efficiency) + load_rounds * args.load_s


def hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f}"


def table(args: Assumptions) -> str:
    """The plan as a Markdown table: one row per protocol, wall hours and GPU-hours per GPU count."""
    head = "| protocol | models | completions/model | GPU-h of work |" + "".join(
        f" wall h @{g} | GPU-h @{g} |" for g in args.gpus
    )
    rows = [head, "|" + "---|" * (4 + 2 * len(args.gpus))]
    for w in WORKLOADS:
        cells = [w.protocol, str(w.models), f"{w.completions_per_model:,}", hours(compute_gpu_s(w, args))]
        for g in args.gpus:
            cells += [hours(wall_s(w, g, args)), hours(wall_s(w, g, args) * g)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def parse(argv: list[str]) -> Assumptions:
    """The assumptions: flags over the defaults, the throughput from a GPU check's log when given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--decode-tps",
        type=float,
        default=2500.0,
        help="generated tokens/s per GPU (default 2500: assumed, 7B VLM, vLLM, full batch)",
    )
    parser.add_argument(
        "--gpu-check-log",
        type=Path,
        help="take --decode-tps from benchmarks/gpu_check.sh output (run with MODEL=a real model)",
    )
    parser.add_argument("--prefill-share", type=float, default=0.15, help="prompt processing as a share of decode")
    parser.add_argument("--pgd-step-s", type=float, default=0.25, help="seconds per PGD step per item (7B, hf:)")
    parser.add_argument("--efficiency", type=float, default=0.9, help="data-parallel efficiency on > 1 GPU")
    parser.add_argument("--load-s", type=float, default=120.0, help="seconds to load one model onto a GPU")
    parser.add_argument("--gpus", type=int, nargs="+", default=[1, 4, 32])
    ns = parser.parse_args(argv)
    args = Assumptions(
        decode_tps=gpu_check_tps(ns.gpu_check_log) if ns.gpu_check_log is not None else ns.decode_tps,
        prefill_share=ns.prefill_share,
        pgd_step_s=ns.pgd_step_s,
        efficiency=ns.efficiency,
        load_s=ns.load_s,
        gpus=tuple(ns.gpus),
    )
    if args.decode_tps <= 0 or args.pgd_step_s < 0 or not 0 < args.efficiency <= 1 or min(args.gpus) < 1:
        raise SystemExit("--decode-tps must be > 0, --pgd-step-s >= 0, --efficiency in (0, 1], --gpus >= 1")
    return args


def main(argv: list[str]) -> None:
    args = parse(argv)
    print(
        f"decode {args.decode_tps:,.0f} tokens/s per GPU, prefill +{args.prefill_share:.0%}, "
        f"PGD {args.pgd_step_s} s per step per item, efficiency {args.efficiency} on > 1 GPU, "
        f"model load {args.load_s:.0f} s\n"
    )
    print(table(args))
    print()
    for w in WORKLOADS:
        print(f"- {w.protocol}: {w.source}")


if __name__ == "__main__":
    main(sys.argv[1:])
