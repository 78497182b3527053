"""A run folder as ``harness eval`` and ``harness score`` write it: checked writable before any model loads,
created per run, the tasks' reports (and their plots) written in it, the run's first claim kept aside before
a re-score replaces it, and, when the disk is full, the whole run saved elsewhere with the command that
finishes it. ``results.json`` and the samples files themselves are written by ``harness.results.schema``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.disk import failed_path, is_disk_error
from harness.engine.task_scoring import TaskScorer
from harness.errors import HarnessError
from harness.paths import new_run_dir
from harness.results.schema import RunResults, RunWriteError, SampleRecord, write_run

#: The folder of a run that keeps its files as first written, once a re-score in place replaces them.
ORIGINALS = "original"


def check_output(output: Path | None) -> None:
    """Fail in one line when no run folder can be written under ``output`` (a file in the way, no
    permission, a read-only disk), by creating it and a probe file, before any model loads or generates."""
    if output is None:
        return
    try:
        output.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=output, prefix=".harness-write-check-"):
            pass
    except OSError as exc:
        raise HarnessError(
            f"--output {output}: cannot write a run folder there ({exc.strerror or exc}); choose another folder"
        ) from None


def new_run_folder(output: Path | None, model_spec: str, started: float) -> tuple[Path | None, RunWriteError | None]:
    """The new run folder under ``output`` (None without one); a full disk is returned as the failure, so the
    run can still be saved elsewhere."""
    if output is None:
        return None, None
    try:
        return new_run_dir(output, model_spec, started), None
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        return None, RunWriteError(failed_path(exc, output), exc, 0)


def task_reports(
    scorers: dict[str, TaskScorer], samples: dict[str, list[SampleRecord]], run_dir: Path | None
) -> dict[str, dict[str, Any]]:
    """Each task's own report (``harness_report``), its plots written in ``run_dir``; tasks without one
    are left out."""
    out = {}
    for task, scorer in scorers.items():
        report = scorer.report(samples[task], run_dir)
        if report is not None:
            out[task] = report
    return out


def run_reports(
    scorers: dict[str, TaskScorer],
    samples: dict[str, list[SampleRecord]],
    run_dir: Path | None,
    failure: RunWriteError | None,
) -> tuple[dict[str, dict[str, Any]], RunWriteError | None]:
    """The tasks' reports, their plots written in ``run_dir``; a full disk while writing them becomes the
    failure, and the reports are made again without their plots."""
    if run_dir is not None and failure is None:
        try:
            return task_reports(scorers, samples, run_dir), None
        except OSError as exc:
            if not is_disk_error(exc):
                raise
            failure = RunWriteError(failed_path(exc, run_dir), exc, 0)
    return task_reports(scorers, samples, None), failure


def unsaved(
    failure: RunWriteError,
    run_dir: Path,
    run: RunResults,
    samples: dict[str, list[SampleRecord]],
    include_paths: Sequence[str | Path],
    store_path: Path | None,
) -> HarnessError:
    """The one-line error of an eval whose run folder cannot be written: the whole run is saved in a
    temporary folder instead (another file system, usually), to be finished with ``harness score``.
    ``store_path``: the response store that holds the answers, None when the run kept none."""
    rescore = "".join(f" --include-path {shlex.quote(str(p))}" for p in include_paths)
    fallback = Path(tempfile.mkdtemp(prefix="harness-unsaved-run-"))
    try:
        write_run(fallback, run, samples)
    except RunWriteError as again:
        shutil.rmtree(fallback, ignore_errors=True)
        kept = (
            (
                f"the answers are in the response store {store_path}: free space and rerun the same command, "
                "which generates nothing again"
            )
            if store_path
            else "the answers could not be kept (no response store): free space and rerun the command"
        )
        return HarnessError(f"cannot write the run folder: {failure}; nor a copy elsewhere ({again}); {kept}")
    kept = "the samples files written there are kept, and " if any(run_dir.glob("samples_*.jsonl")) else ""
    finish = f"harness score {shlex.quote(str(fallback))} --output {shlex.quote(str(run_dir))}{rescore}"
    return HarnessError(
        f"cannot write the run folder: {failure}; {kept}the whole run is saved in {fallback}: free "
        f"space, then `{finish}` writes it there"
    )


def file_stamps(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file of ``folder`` by name: its modification time and size (what a write changed)."""
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.iterdir() if p.is_file()}


def keep_originals(run_dir: Path) -> Path:
    """Copy the run's claim (results.json, samples, plots) to ``run_dir/original/`` unless a copy is there
    already; the copy is made in a temporary folder and renamed, so it is whole or absent."""
    kept = run_dir / ORIGINALS
    if (kept / "results.json").is_file():
        return kept
    tmp = run_dir / f".{ORIGINALS}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        for path in run_dir.iterdir():
            if path.is_file() and (
                path.name == "results.json"
                or path.suffix == ".png"
                or (path.name.startswith("samples_") and path.suffix == ".jsonl")
            ):
                shutil.copy2(path, tmp / path.name)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a full disk: no half copy is left
        raise
    shutil.rmtree(kept, ignore_errors=True)  # an incomplete copy (no results.json) is replaced
    os.replace(tmp, kept)
    return kept
