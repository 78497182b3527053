"""The ``harness`` command line: eval, score, audit, tasks, protocols, build, submit, leaderboard, view, and the
protocols' own commands. Each module maps its arguments to a config object and calls the library; the protocol
commands come from the registry (:mod:`harness.protocols.base`)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from harness import __version__
from harness.cli import audit, build, compare, leaderboard, protocols, report, score, submit, tasks, view
from harness.cli import eval as evaluate
from harness.cli.common import common_parser, configure_logging
from harness.cli.lmms_spelling import harness_spelling
from harness.disk import disk_problem, failed_path, is_disk_error
from harness.errors import HarnessError
from harness.extras import missing_extra
from harness.hub import settle_offline_mode
from harness.secrets import redact_text

#: Commands that never reach the Hugging Face Hub, so they skip its reachability probe.
LOCAL_COMMANDS = frozenset({"tasks", "protocols", "score", "compare", "report", "view"})


def build_parser() -> argparse.ArgumentParser:
    """The ``harness`` argument parser: the common options, ``--version``, every built-in command and each
    registered protocol's audit and own commands."""
    common = common_parser()
    parser = argparse.ArgumentParser(
        prog="harness", parents=[common], description="Audit vision-language models with published protocols."
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    evaluate.add_parser(sub, common)
    score.add_parser(sub, common)
    compare.add_parser(sub, common)
    audit.add_parser(sub, common)
    audit.add_protocol_commands(sub, common)
    for module in (tasks, protocols, build, submit, leaderboard, report, view):
        module.add_parser(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The ``harness`` entry point: runs the parsed command and returns its exit status; a harness error
    (or a missing extra) is printed in one line with status 2 unless ``--verbosity debug``, Ctrl-C is 130."""
    verbosity = "info"
    args = None
    interrupt = _InterruptSeen()
    try:  # parsing too: it loads the protocols and, for harness build NAME, that builder's options
        args = build_parser().parse_args(harness_spelling(sys.argv[1:] if argv is None else argv))
        verbosity = args.verbosity = getattr(args, "verbosity", "info")
        configure_logging(verbosity)
        if args.command not in LOCAL_COMMANDS:  # before any Hub library reads its offline setting
            settle_offline_mode()
        code: int = args.func(args)
        if interrupt.seen and code == 0:
            raise KeyboardInterrupt  # a library swallowed Ctrl-C: the command did not finish as asked
        return code
    except (HarnessError, ModuleNotFoundError, OSError) as exc:
        error = _one_line(exc)
        if error is None or verbosity == "debug":
            raise
        print(f"error: {redact_text(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        interrupted = getattr(args, "interrupted", None)
        print(
            "\n"
            + (
                interrupted(args)
                if interrupted is not None
                else "interrupted: finished requests are in the response store; rerun the same command to resume"
            ),
            file=sys.stderr,
        )
        return 130
    finally:
        interrupt.restore()


class _InterruptSeen:
    """Python's Ctrl-C handler (raise ``KeyboardInterrupt``) that also records that Ctrl-C came: a library
    that catches the exception and carries on cannot turn an interrupted command into exit status 0."""

    def __init__(self) -> None:
        self.seen = False
        self._previous = signal.getsignal(signal.SIGINT)
        self._installed = (  # not when the caller chose its own handling, nor off the main thread
            self._previous is signal.default_int_handler and threading.current_thread() is threading.main_thread()
        )
        if self._installed:
            signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def restore(self) -> None:
        """Put back the handler that was there before."""
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)


def _one_line(exc: Exception) -> object | None:
    """The line to print for an error the user can act on (a harness error, a missing extra, a full or
    read-only disk), or None for a bug, which keeps its traceback."""
    if isinstance(exc, HarnessError):
        return exc
    if isinstance(exc, ModuleNotFoundError):
        return missing_extra(exc)
    if isinstance(exc, OSError) and is_disk_error(exc):
        return disk_problem(failed_path(exc, Path.cwd()), exc)
    return None
