"""DiaVLo DML cost: one concept's estimate with its two refutations at the paper's 100 sample splits,
against ``--quick`` (5 splits), on a planted effect; threads over the splits against one thread.

Usage: python benchmarks/diavlo_dml.py [--rows 200] [--jobs 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from harness.protocols.diavlo.concept_effects import PAPER_REPS, QUICK_REPS, DMLSettings, concept_effect


def _timed(y: np.ndarray, t: np.ndarray, x: np.ndarray, settings: DMLSettings) -> tuple[float, float]:
    start = time.perf_counter()
    effect = concept_effect("c", y, t, x, settings)
    assert effect.estimate is not None
    return time.perf_counter() - start, effect.estimate.effect


def main() -> None:
    """Prints seconds per concept (estimate + placebo + random common cause) for each setting."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = np.column_stack(
        [
            rng.integers(0, 5, args.rows),
            rng.uniform(size=args.rows),
            rng.integers(1, 8, args.rows),
            rng.integers(0, 2, args.rows),
        ]
    ).astype(float)
    t = (rng.uniform(size=args.rows) < 0.5).astype(float)
    y = 0.3 * t + 0.1 * x[:, 0] + 0.2 * rng.normal(size=args.rows)
    _timed(y, t, x, DMLSettings(n_rep=1))  # imports
    quick, q_effect = _timed(y, t, x, DMLSettings(n_rep=QUICK_REPS, n_jobs=args.jobs))
    one, _ = _timed(y, t, x, DMLSettings(n_rep=PAPER_REPS, n_jobs=1))
    full, f_effect = _timed(y, t, x, DMLSettings(n_rep=PAPER_REPS, n_jobs=args.jobs))
    print(f"rows {args.rows}; planted effect 0.3")
    print(f"--quick ({QUICK_REPS} splits): {quick:.1f} s per concept, effect {q_effect:.3f}")
    print(
        f"{PAPER_REPS} splits, 1 thread: {one:.1f} s; threads ({args.jobs or 'all CPUs'}): {full:.1f} s "
        f"(speed-up {one / full:.2f}x), effect {f_effect:.3f}; {PAPER_REPS} vs quick: {full / quick:.1f}x"
    )


if __name__ == "__main__":
    main()
