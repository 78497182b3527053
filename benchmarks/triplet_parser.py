"""Time of the DiaVLo triplet parser per MB of model output, on crafted text (the shapes that made the
old parser quadratic: long whitespace runs, repeated ``subject:`` labels, unclosed brackets) and on
normal answers (lines of triplets in the accepted shapes).

    python benchmarks/triplet_parser.py [--kb 120] [--baseline GIT_REV]

``--baseline`` also times the parser as it was at GIT_REV (read with ``git show``) on the same inputs cut
to ``--baseline-kb`` (default 20 KB, as a quadratic parser takes minutes on 120 KB), and prints the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.at_revision import module_at  # noqa: E402
from harness.protocols.diavlo.triplet_parser import parse_triplets  # noqa: E402

NORMAL_LINES = (
    "1. (dog, sitting on, couch)",
    "- cat -> next to -> lamp",
    "person | holding | umbrella",
    "subject: car, relation: parked near, object: tree",
    "<bird; perched on; fence>",
)


def inputs(size: int) -> dict[str, str]:
    """Each case as ``size`` characters of text."""

    def fill(unit: str, head: str = "") -> str:
        return (head + unit * (size // len(unit) + 1))[:size]

    normal = "\n".join(NORMAL_LINES) + "\n"
    return {
        "crafted: whitespace run": fill(" ", "a") + "b",
        "crafted: repeated subject:": fill("subject: "),
        "crafted: unclosed [": fill("["),
        "crafted: unclosed {": fill("{a "),
        "normal: triplet lines": fill(normal),
    }


def seconds(parse: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    parse(text)
    return time.perf_counter() - start


def baseline_parser(rev: str) -> Callable[[str], object]:
    """``parse_triplets`` as it was at ``rev``."""
    parse: Callable[[str], object] = module_at(rev, "harness/protocols/diavlo/triplet_parser.py").parse_triplets
    return parse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", type=int, default=120)
    parser.add_argument("--baseline", help="a git revision whose parser to compare with")
    parser.add_argument("--baseline-kb", type=int, default=20)
    args = parser.parse_args()
    old = baseline_parser(args.baseline) if args.baseline else None
    print(f"{'case':30} {'s per MB':>10}" + (f" {'old s per MB':>13} {'old/new':>9}" if old else ""))
    small = inputs(args.baseline_kb * 1000)
    for name, text in inputs(args.kb * 1000).items():
        per_mb = seconds(parse_triplets, text) / (len(text) / 1e6)
        line = f"{name:30} {per_mb:10.3f}"
        if old is not None:
            cut = small[name]
            old_per_mb = seconds(old, cut) / (len(cut) / 1e6)
            new_per_mb = seconds(parse_triplets, cut) / (len(cut) / 1e6)
            line += f" {old_per_mb:13.1f} {old_per_mb / max(new_per_mb, 1e-9):9.0f}"
        print(line)


if __name__ == "__main__":
    main()
