"""Time of the nesting check every JSONL reader runs before its parser (``harness.results.jsonl.check_depth``)
on worst-case lines from 1 KB to 4 MB, and the ratio of each size's time to the previous size's: a linear
check doubles its time when the line doubles (ratio ~2 per doubling, ~4 per x4 step); a quadratic one
multiplies it by 16 per x4 step.

    python benchmarks/json_depth_linear.py [--baseline GIT_REV --baseline-kb 64]

The shapes: 65 ``[`` then an unclosed string of escaped quotes (the one that made the old scanner
quadratic: each quote restarted a string match that ran to the end of the line), brackets only, and many
short strings between brackets. ``--baseline`` also times the check as it was at GIT_REV on lines up to
``--baseline-kb`` (a quadratic check takes minutes on a few hundred KB).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.at_revision import module_at  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.results.jsonl import check_depth  # noqa: E402

SIZES_KB = (1, 4, 16, 64, 256, 1024, 4096)


def shapes(size: int) -> dict[str, str]:
    """Each worst case as a line of ``size`` characters."""
    return {
        '[x65 then unclosed \\" run': ("[" * 65 + '"' + '\\"' * size)[:size],
        "brackets only": ("[" * size)[:size],
        'short strings ["",': ("[" * 65 + '"",' * size)[:size],
    }


def seconds(check: Callable[[str, str], None], line: str) -> float:
    """Best of three runs of the check on ``line``."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        with contextlib.suppress(HarnessError):  # a refusal is the expected outcome
            check(line, "benchmark")
        best = min(best, time.perf_counter() - start)
    return best


def baseline_check(rev: str) -> Callable[[str, str], None]:
    """``check_depth`` as it was at ``rev``."""
    check: Callable[[str, str], None] = module_at(rev, "harness/results/jsonl.py").check_depth
    return check


def table(check: Callable[[str, str], None], sizes_kb: tuple[int, ...], title: str) -> None:
    """Prints each shape's time per size and the ratio to the size before."""
    print(title)
    print(f"  {'shape':30} {'size':>8} {'seconds':>10} {'x time':>8} {'x size':>7}")
    for shape in shapes(1024):
        before: tuple[int, float] | None = None
        per_mb = []
        for kb in sizes_kb:
            took = seconds(check, shapes(kb * 1024)[shape])
            ratio = f"{took / before[1]:8.1f} {kb / before[0]:7.0f}" if before and before[1] > 0 else f"{'':8} {'':7}"
            print(f"  {shape:30} {kb:>6}KB {took:10.5f} {ratio}")
            before = (kb, took)
            per_mb.append(took / kb * 1024)
        print(f"  {shape:30} seconds per MB: {per_mb[-1]:.4f} at {sizes_kb[-1]} KB, {min(per_mb):.4f} at best")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="also time check_depth as it was at this git revision")
    parser.add_argument("--baseline-kb", type=int, default=64, help="the baseline's largest line (KB)")
    args = parser.parse_args()
    table(check_depth, SIZES_KB, "check_depth now (linear: x time ~ x size)")
    if args.baseline:
        sizes = tuple(kb for kb in SIZES_KB if kb <= args.baseline_kb)
        table(baseline_check(args.baseline), sizes, f"check_depth at {args.baseline}")


if __name__ == "__main__":
    main()
