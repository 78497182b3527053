"""Argument readers shared by the command line (:mod:`harness.cli`) and the protocols' own commands
(``harness audit <name>``, ``harness attack``), which sit below the CLI in the layers and so cannot import it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from harness.data import default_data_dir
from harness.paths import audit_dir, default_store_path


def show_progress(args: argparse.Namespace) -> bool:
    """Whether progress bars are shown: everywhere but at ``--verbosity quiet``."""
    verbosity: str = args.verbosity
    return verbosity != "quiet"


def default_store() -> Path:
    """The harness cache's response store."""
    return default_store_path()


def response_store(args: argparse.Namespace) -> Path:
    """The ``--cache`` response store, else the default one."""
    return Path(args.cache) if args.cache else default_store()


def data_dir(args: argparse.Namespace) -> Path:
    """The ``--data-dir`` folder, else the default data dir (where ``harness build`` writes)."""
    return Path(args.data_dir) if args.data_dir else default_data_dir()


def names(text: str | None) -> list[str]:
    """A comma-separated list of names (``--tasks a,b``), blanks dropped."""
    return [t for t in (text or "").split(",") if t.strip()]


def add_run_task_arguments(parser: argparse.ArgumentParser) -> None:
    """``--include-path`` and ``--trust-run-include-paths`` for commands that score saved runs: tasks come
    from the bundled tasks and the folders named here, never from the run's recorded ones by default."""
    parser.add_argument(
        "--include-path",
        action="append",
        default=[],
        help="extra task folder whose code you trust (repeatable); a run's recorded include paths are not used",
    )
    parser.add_argument(
        "--trust-run-include-paths",
        action="store_true",
        help="also import task code from the include paths the run records (only for runs you made or trust)",
    )


def audit_folder(output: str | None, run_dirs: Sequence[Path], protocol: str) -> Path:
    """``--output``, else a stamped ``audit-<protocol>-<UTC time>`` folder beside the runs' model folders."""
    return Path(output) if output else audit_dir(run_dirs[0].parent.parent, protocol)
