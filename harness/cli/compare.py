"""``harness compare RUN_A RUN_B [RUN ...]``: models compared on the same docs, per task and metric."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.arguments import names


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness compare RUN_A RUN_B ...``: paired differences, intervals, p-values, MDE, changed docs."""
    cp = sub.add_parser(
        "compare",
        parents=[common],
        help="compare two or more runs (models) on the same docs: paired differences with 95%% intervals, "
        "p-values, minimum detectable effects, and the docs that changed",
    )
    cp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="two or more run folders of harness eval")
    cp.add_argument(
        "--vs-first", action="store_true", help="compare each run with the first (a baseline) instead of all pairs"
    )
    cp.add_argument("--tasks", type=names, help="only these tasks or groups (comma-separated)")
    cp.add_argument("--output", help="also write compare.json, compare.csv and changed.csv to this folder")
    cp.set_defaults(func=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    """Prints the comparison table and, with --output, where its files went."""
    from harness.engine.compare import CompareOptions, compare_runs, compare_table

    options = CompareOptions(
        run_dirs=[Path(d) for d in args.run_dirs],
        pairing="vs_first" if args.vs_first else "all_pairs",
        tasks=args.tasks,
    )
    report = compare_runs(options)
    print(compare_table(report))
    if args.output:
        written = report.write(Path(args.output))
        print(f"\nwrote {', '.join(str(p) for p in written)}")
    return 0
