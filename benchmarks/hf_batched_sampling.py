"""Sampled throughput of the ``hf:`` backend at batch 1 vs batch 8 (samples per second, CPU).

Same requests at both sizes: ``--docs`` prompts with images (the bundled shapes set through the
``shapes_color`` task) on a tiny random-weight model, ``n`` samples each at temperature 0.7, through
``harness eval`` with no response store. Each request draws from its own seeded generator, so both
sizes must return the same samples; the script checks that before it prints the ratio.

Usage: python benchmarks/hf_batched_sampling.py [--arch llava] [--docs 32] [--n 4] [--tokens 16]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from builders import build_dataset  # noqa: E402
from harness.data import default_data_dir  # noqa: E402
from harness.engine.runner import EvalOptions, evaluate  # noqa: E402
from harness.models import Backend, create_backend  # noqa: E402


def run(backend: Backend, docs: int, n: int, tokens: int, batch: int) -> tuple[float, list[list[str]]]:
    """Seconds spent generating, and every sample in doc order."""
    opts = EvalOptions(
        tasks=["shapes_color"],
        data_dir=default_data_dir(),
        limit=docs,
        batch_size=batch,
        use_cache=False,
        repeats=n,
        gen_overrides={"temperature": 0.7, "max_new_tokens": tokens},
        show_progress=False,
    )
    started = time.perf_counter()
    _, samples, _ = evaluate(backend, "bench", opts)
    return time.perf_counter() - started, [r.responses for r in samples["shapes_color"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="llava")
    parser.add_argument("--docs", type=int, default=32)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    build_dataset("shapes", None, seed=0)
    backend = create_backend(f"tiny:{args.arch}", {"dtype": "float32"})
    run(backend, 2, args.n, args.tokens, 1)  # warm-up
    total = args.docs * args.n
    one, samples_one = run(backend, args.docs, args.n, args.tokens, 1)
    eight, samples_eight = run(backend, args.docs, args.n, args.tokens, 8)
    same = sum(a == b for a, b in zip(samples_one, samples_eight, strict=True))
    print(f"tiny:{args.arch}, {args.docs} docs x n={args.n}, {args.tokens} new tokens, temperature 0.7")
    print(f"batch 1: {one:.2f} s ({total / one:.1f} samples/s)")
    print(f"batch 8: {eight:.2f} s ({total / eight:.1f} samples/s)")
    print(f"speed-up batch 8 / batch 1: {one / eight:.2f}x")
    print(f"docs whose samples are identical at both sizes: {same}/{len(samples_one)}")


if __name__ == "__main__":
    main()
