"""``harness leaderboard``: run, administer and export the leaderboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.common import add_read_timeout
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.leaderboard.service import OnMismatch, Settings

# The choices of --on-mismatch, spelled here (checked against their Literal type) so that building the parser
# loads none of the leaderboard's libraries.
ON_MISMATCH_CHOICES: tuple[OnMismatch, ...] = ("flag", "refuse")


DB_HELP = "database URL (default sqlite:///$HARNESS_CACHE/leaderboard.sqlite; postgresql+psycopg://...)"

#: ``harness leaderboard serve``'s own options: (flag, argparse keywords).
SERVE_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--host", {"default": "127.0.0.1", "help": "address to listen on (default 127.0.0.1)"}),
    ("--port", {"type": int, "default": 8000, "help": "port to listen on (default 8000)"}),
    (
        "--rescore-timeout",
        {
            "type": float,
            "default": 120.0,
            "help": "seconds one upload's whole work may take (reading, re-scoring, storing); re-scoring past three "
            "quarters of it stores the submission unverifiable (timeout)",
        },
    ),
    ("--rescore-workers", {"type": int, "default": 2, "help": "submissions re-scored at once (processes)"}),
    ("--quota-submissions", {"type": int, "default": 50, "help": "submissions one token may store per 24 h"}),
    ("--quota-mb", {"type": float, "default": 1024.0, "help": "MB of files one token may store per 24 h"}),
    (
        "--rate-per-minute",
        {"type": int, "default": 30, "help": "uploads one token may send a minute, refused ones included"},
    ),
    (
        "--rescore-memory-mb",
        {
            "type": int,
            "default": 4096,
            "help": "address space of one re-scoring worker; a submission needing more is refused (413)",
        },
    ),
)

#: The options of the actions that take in runs (``serve`` and ``import``): (flag, argparse keywords).
INGEST_OPTIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("--db", {"help": DB_HELP}),
    (
        "--data-dir",
        {
            "help": "local dataset copies (default: the data dir, where harness build writes): docs are checked "
            "against them, and tasks whose scoring reads images can be re-scored"
        },
    ),
    ("--include-path", {"action": "append", "help": "extra task folder the server scores"}),
    (
        "--on-mismatch",
        {
            "choices": ON_MISMATCH_CHOICES,
            "default": "flag",
            "help": "flag (store and mark) or refuse a run whose claimed figures differ",
        },
    ),
    ("--max-upload-mb", {"type": float, "default": 64.0, "help": "largest submission in MiB (default 64)"}),
    (
        "--max-error-share",
        {
            "type": float,
            "default": 0.05,
            "help": "a task with more errored samples than this share is stored partial",
        },
    ),
)

#: ``harness leaderboard token`` actions and their help.
TOKEN_ACTIONS = (
    ("create", "create a token for NAME (printed once)"),
    ("revoke", "revoke NAME's token"),
    ("list", "list tokens"),
)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness leaderboard`` and its actions: serve the web service, import runs, manage submitter tokens, export a
    static site."""
    lb = sub.add_parser("leaderboard", parents=[common], help="run, administer and export the leaderboard")
    lb_actions = lb.add_subparsers(dest="action", required=True)
    serve = lb_actions.add_parser("serve", parents=[common], help="the web service")
    _add_options(serve, SERVE_OPTIONS)
    ingest = lb_actions.add_parser("import", parents=[common], help="ingest a Hub-layout folder (runs/<model>/<hash>/)")
    for action in (serve, ingest):
        _add_options(action, INGEST_OPTIONS)
        _add_leaderboard_options(action)
        action.set_defaults(func=_cmd_leaderboard)
    ingest.add_argument("folder", help="a folder of runs, as harness submit --to hf:// writes")
    ingest.add_argument(
        "--submitter", default="hub import", help="the name the records give as submitter (default: hub import)"
    )
    add_read_timeout(ingest)  # per run
    tk = lb_actions.add_parser("token", parents=[common], help="submitter tokens")
    tk_actions = tk.add_subparsers(dest="token_action", required=True)
    for name, text in TOKEN_ACTIONS:
        action = tk_actions.add_parser(name, parents=[common], help=text)
        if name != "list":
            action.add_argument("name", help="the submitter's name")
        action.add_argument("--db", help=DB_HELP)
        action.set_defaults(func=_cmd_leaderboard)
    ex = lb_actions.add_parser("export", parents=[common], help="write a static copy of the site")
    ex.add_argument("--output", "--out", dest="out", required=True, help="folder for the static copy")
    ex.add_argument("--db", help=DB_HELP)
    _add_leaderboard_options(ex)
    ex.set_defaults(func=_cmd_leaderboard)


def _add_options(parser: argparse.ArgumentParser, options: tuple[tuple[str, dict[str, Any]], ...]) -> None:
    for flag, keywords in options:
        parser.add_argument(flag, **keywords)


_LB_OPTION = "leaderboard_option"  # dest prefix of the flags each protocol's leaderboard options generate


def _add_leaderboard_options(parser: argparse.ArgumentParser) -> None:
    """``--<protocol>-<option>`` for every option a protocol's leaderboard hooks declare."""
    from harness.leaderboard.hooks import board_protocols

    for protocol, hooks in board_protocols():
        for option in hooks.options:
            parser.add_argument(
                f"--{protocol.name}-{option.name}",
                type=type(option.default),
                default=None,
                dest=f"{_LB_OPTION}:{protocol.name}:{option.name}",
                metavar=option.name.upper(),
                help=f"{option.help} (default {option.default})",
            )


def _leaderboard_settings(args: argparse.Namespace) -> Settings:
    from harness.leaderboard.bundle import Limits
    from harness.leaderboard.quota import Quota
    from harness.leaderboard.service import Settings

    options: dict[str, dict[str, Any]] = {}
    for dest, value in vars(args).items():
        if dest.startswith(f"{_LB_OPTION}:") and value is not None:
            _, protocol, name = dest.split(":")
            options.setdefault(protocol, {})[name] = value

    return Settings(
        db_url=args.db,
        data_dir=_data_dir(args),
        include_paths=tuple(getattr(args, "include_path", None) or ()),
        on_mismatch=getattr(args, "on_mismatch", "flag"),
        max_error_share=getattr(args, "max_error_share", 0.05),
        limits=Limits(
            max_total_bytes=int(getattr(args, "max_upload_mb", 64) * 2**20),
            read_timeout_s=getattr(args, "read_timeout", None),
        ),
        protocol_options=options,
        rescore_timeout_s=getattr(args, "rescore_timeout", 120.0),
        rescore_workers=getattr(args, "rescore_workers", 2),
        rescore_memory_mb=getattr(args, "rescore_memory_mb", 4096),
        quota=Quota(
            submissions_per_day=getattr(args, "quota_submissions", 50),
            bytes_per_day=int(getattr(args, "quota_mb", 1024.0) * 2**20),
            uploads_per_minute=getattr(args, "rate_per_minute", 30),
        ),
    )


def _data_dir(args: argparse.Namespace) -> Path | None:
    """The datasets the server checks submissions against: ``--data-dir`` (refused when it is not a folder:
    every submission would come out partial), else the harness's data dir (``$HARNESS_DATA_DIR``, or data/
    under ``$HARNESS_CACHE``); None for the actions that read no dataset."""
    from harness.arguments import data_dir

    if not hasattr(args, "data_dir"):
        return None
    folder = data_dir(args)
    if args.data_dir and not folder.is_dir():
        raise HarnessError(
            f"--data-dir {folder}: no such folder; the leaderboard checks each submission's docs against the "
            "datasets there (harness build NAME writes them to the data dir, the default)"
        )
    return folder


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    """Runs one ``harness leaderboard`` action: serve, or token, export or import on the configured database."""
    from harness.leaderboard.db import Database

    settings = _leaderboard_settings(args)
    if args.action == "serve":
        from harness.leaderboard.server import serve

        serve(settings, args.host, args.port)
        return 0
    db = Database(settings.db_url)
    if args.action == "token":
        from harness.leaderboard import tokens

        if args.token_action == "create":
            print(tokens.create_token(db, args.name))
            print(f"token for {args.name!r}: shown once; the server keeps only its hash", file=sys.stderr)
        elif args.token_action == "revoke":
            tokens.revoke_token(db, args.name)
            print(f"revoked {args.name!r}")
        else:
            for name, created, active in tokens.list_tokens(db):
                print(f"{name}\t{created}\t{'active' if active else 'revoked'}")
    elif args.action == "export":
        from harness.leaderboard.export import export_site

        print(f"static site: {export_site(db, Path(args.out), settings) / 'index.html'}")
    elif args.action == "import":
        from harness.leaderboard.client import hub_runs
        from harness.leaderboard.service import import_runs

        refused = 0
        for run_dir, outcome in import_runs(db, hub_runs(Path(args.folder)), args.submitter, settings):
            if isinstance(outcome, Exception):
                refused += 1
                print(f"{run_dir}: refused: {outcome}", file=sys.stderr)
            else:
                note = " (already stored)" if outcome.duplicate else ""
                print(f"{run_dir}: submission {outcome.id} {outcome.status}{note}")
        return 1 if refused else 0
    return 0
