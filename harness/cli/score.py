"""``harness score``: recompute every metric of a saved run from its samples (no model loads)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.arguments import add_run_task_arguments
from harness.cli.common import add_read_timeout

if TYPE_CHECKING:
    from harness.results.schema import RunResults, SampleRecord


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness score RUN_DIR``: rescoring in place, or into ``--output``."""
    sc = sub.add_parser("score", parents=[common], help="recompute all metrics of a run folder from its samples")
    sc.add_argument("run_dir", help="a run folder (with results.json and samples_<task>.jsonl)")
    sc.add_argument("--data-dir", help="needed only for tasks whose scoring reads images")
    sc.add_argument(
        "--output",
        help="write the rescored files to this folder instead of rewriting the run "
        "(in place, the run's first files are kept in RUN_DIR/original/)",
    )
    add_run_task_arguments(sc)
    sc.add_argument(
        "--verify",
        action="store_true",
        help="also rebuild every sample's request from the task "
        "(prompt, images with --data-dir, generation settings, n, seed) and fail when one differs, or when "
        "the re-scored answers do not give the run's claimed scores",
    )
    add_read_timeout(sc)
    sc.set_defaults(func=_cmd_score)


def _cmd_score(args: argparse.Namespace) -> int:
    """Rescores a run from its samples and prints its summary table and which files were written where."""
    from harness.engine.report import summary_table
    from harness.engine.rescore import score_run
    from harness.results.jsonl import read_budget
    from harness.results.schema import read_run, read_samples

    with read_budget(args.read_timeout):
        if args.verify and not _verified(args):
            return 1
        run_dir = Path(args.run_dir)
        claimed = read_run(run_dir) if args.verify else None
        claimed_samples = {t: read_samples(run_dir, t) for t in claimed.configs} if claimed else {}
        run, samples = score_run(
            run_dir,
            Path(args.data_dir) if args.data_dir else None,
            Path(args.output) if args.output else None,
            args.include_path,
            args.trust_run_include_paths,
        )
    print(summary_table(run, Path(args.output or args.run_dir)))
    rescored = run.provenance.rescored
    assert rescored is not None  # score_run always records its rescoring
    if rescored.originals is None:
        print(f"\nwrote to {args.output}: {', '.join(rescored.files)} (the run folder is unchanged)")
    else:
        print(
            f"\nrewrote in {args.run_dir}: {', '.join(rescored.files)}; the run's files as first written "
            f"are kept in {rescored.originals}"
        )
    return 0 if claimed is None or _claims_hold(claimed, claimed_samples, run, samples) else 1


def _claims_hold(
    claimed: RunResults,
    claimed_samples: dict[str, list[SampleRecord]],
    rescored: RunResults,
    samples: dict[str, list[SampleRecord]],
) -> bool:
    """Prints, for ``--verify``, each task whose claims its answers do not give (one line each); whether
    every claim holds."""
    from harness.engine.request_check import claims_difference

    differing = {
        task: found
        for task in claimed_samples
        if (found := claims_difference(task, claimed, claimed_samples[task], rescored, samples[task]))
    }
    for task, found in differing.items():
        print(f"{task}: claims differ from the re-scored answers (first: {found})")
    return not differing


def _verified(args: argparse.Namespace) -> bool:
    """Prints each task's request check (one line each); whether every request is the task's own."""
    from harness.engine.request_check import check_run_requests
    from harness.engine.tasks import run_include_paths
    from harness.results.schema import read_run
    from harness.taskspec.registry import TaskRegistry

    run_dir = Path(args.run_dir)
    paths = run_include_paths(read_run(run_dir), run_dir, args.include_path, args.trust_run_include_paths)
    checks = check_run_requests(run_dir, TaskRegistry.discover(paths), Path(args.data_dir) if args.data_dir else None)
    for check in checks:
        images = "" if check.images_checked else ", images not checked"
        state = (
            f"modified ({check.differing} of {check.checked}; first: {check.first})"
            if check.modified
            else f"as the task builds them ({check.checked} samples{images})"
        )
        print(f"{check.task}: requests {state}")
    return not any(c.modified for c in checks)
