"""What every command shares: the ``--verbosity`` flag, logging and ``--gen-kwargs``. The argument readers the
protocols' own commands share too live in :mod:`harness.arguments`."""

from __future__ import annotations

import argparse
import json
import logging
import os
from typing import Any, Literal, get_args

from harness.secrets import RedactingFilter, remember

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
    remember()  # the secret environment variables: cleared from every line from now on
    for handler in logging.getLogger().handlers:  # a credential never reaches a log line
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
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


def add_read_timeout(parser: argparse.ArgumentParser) -> None:
    """``--read-timeout SECONDS``: how long a command may spend reading a run's files."""
    from harness.results.jsonl import DEFAULT_READ_TIMEOUT_S

    parser.add_argument(
        "--read-timeout",
        type=float,
        default=DEFAULT_READ_TIMEOUT_S,
        metavar="SECONDS",
        help=f"stop in one line when reading a run's files takes longer (default {DEFAULT_READ_TIMEOUT_S:g})",
    )


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
