"""What every command shares: the ``--verbosity`` flag, logging, default paths and small argument readers."""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

Verbosity = Literal["quiet", "info", "debug"]
_LEVELS: dict[Verbosity, int] = {"quiet": logging.ERROR, "info": logging.WARNING, "debug": logging.DEBUG}


def common_parser() -> argparse.ArgumentParser:
    """The parent parser of every command: ``--verbosity`` is accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--verbosity",
        choices=get_args(Verbosity),
        default=argparse.SUPPRESS,
        help="debug shows tracebacks; quiet hides progress bars",
    )
    return common


def configure_logging(verbosity: Verbosity) -> None:
    """Log at the level ``verbosity`` asks for; below debug, libraries keep their progress and warnings quiet."""
    logging.basicConfig(level=_LEVELS[verbosity], format="%(levelname)s %(name)s: %(message)s")
    if verbosity != "debug":
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("HF_HUB_VERBOSITY", "error")
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # also silences transformers' loading bars
        for name in ("transformers", "datasets", "huggingface_hub", "filelock", "diffusers"):
            logging.getLogger(name).setLevel(logging.ERROR)
    # these give their loggers a handler of their own at import: passed on as well, each line would print twice
    for name in ("huggingface_hub", "datasets"):
        logging.getLogger(name).propagate = False


def show_progress(args: argparse.Namespace) -> bool:
    """Whether progress bars are shown: everywhere but at ``--verbosity quiet``."""
    verbosity: Verbosity = args.verbosity
    return verbosity != "quiet"


def default_store() -> Path:
    """The harness cache's response store."""
    from harness.paths import default_store_path

    return default_store_path()


def response_store(args: argparse.Namespace) -> Path:
    """The ``--cache`` response store, else the default one."""
    return Path(args.cache) if args.cache else default_store()


def data_dir(args: argparse.Namespace) -> Path:
    """The ``--data-dir`` folder, else the default data dir (where ``harness build`` writes)."""
    from harness.data import default_data_dir

    return Path(args.data_dir) if args.data_dir else default_data_dir()


def names(text: str | None) -> list[str]:
    """A comma-separated list of names (``--tasks a,b``), blanks dropped."""
    return [t for t in (text or "").split(",") if t.strip()]


def parse_gen_kwargs(text: str | None) -> dict[str, Any]:
    """``--gen-kwargs temperature=0.7,max_new_tokens=64`` with JSON-ish values."""
    from harness.models.base import parse_model_args

    out: dict[str, Any] = {}
    for key, value in parse_model_args(text).items():
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


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
    from harness.paths import audit_dir

    return Path(output) if output else audit_dir(run_dirs[0].parent.parent, protocol)
