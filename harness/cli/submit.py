"""``harness submit``: send a run to a leaderboard (a server, a Hub repo or a folder)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.common import add_read_timeout


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness submit RUN_DIR --to TARGET``."""
    sm = sub.add_parser("submit", parents=[common], help="send a run to a leaderboard (server, Hub repo or folder)")
    sm.add_argument("run_dir", help="the run folder to submit")
    sm.add_argument(
        "--to",
        required=True,
        help="http(s)://HOST[:PORT] (a leaderboard server), hf://datasets/ORG/NAME (the run's files), "
        "hf://ORG/MODEL (the scores, as the model repo's .eval_results/*.yaml), or a local folder",
    )
    sm.add_argument("--token", help="submitter token for a server (env HARNESS_LEADERBOARD_TOKEN) or Hub token")
    sm.add_argument(
        "--leaderboard",
        metavar="URL",
        help="with --to hf://ORG/MODEL: submit to this leaderboard server first (--token is its token; the Hub "
        "token then comes from HF_TOKEN or huggingface-cli login) and mark the figures it verified",
    )
    add_read_timeout(sm)
    sm.set_defaults(func=_cmd_submit)


def _cmd_submit(args: argparse.Namespace) -> int:
    """Submits a run and prints the answer: a server's id, status and failed checks, or where it was written."""
    from harness.leaderboard.client import submit

    answer = submit(Path(args.run_dir), args.to, args.token, args.leaderboard, args.read_timeout)
    if "id" in answer:
        state = "already on the leaderboard" if answer["duplicate"] else "stored"
        print(f"submission {answer['id']}: {answer['status']} ({state}); {answer['page']}")
        for task, check in answer["checks"].items():
            if check["status"] != "verified":
                print(f"  {task}: {check['status']}: {check['message']}")
    if "files" in answer:
        print(f"evaluation results {', '.join(answer['files'])}: {answer['hub']}")
    elif "id" not in answer:
        print(f"written: {answer.get('folder') or answer.get('hub')}")
    return 0
