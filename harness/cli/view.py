"""``harness view``: look at runs and audits in a local web viewer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.data import default_data_dir
from harness.extras import require

#: What the viewer needs beyond the core install, each named by the [view] extra when missing.
VIEW_MODULES = ("fastapi", "uvicorn")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness view [RUN_DIR | FOLDER ...] [--port N] [--host ADDRESS]``."""
    vw = sub.add_parser(
        "view",
        parents=[common],
        help="look at runs (samples, images, side by side) and audits in a local web viewer",
        description="Serves a web viewer of the run folders and audit folders in or under the given folders "
        "on 127.0.0.1. Each run's samples are indexed once (SQLite, in the cache folder) and re-indexed when "
        "its files change; images are found in the run's dataset by the digests its samples record.",
    )
    vw.add_argument("folders", nargs="*", default=["."], help="run folders, audit folders or folders holding them")
    vw.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    vw.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1, this machine only; another interface shows the runs to "
        "anyone who can reach it)",
    )
    vw.add_argument(
        "--index-dir",
        help="folder for the runs' sample indexes (default $HARNESS_CACHE/viewer; never a run folder unless named "
        "here)",
    )
    vw.add_argument(
        "--data-dir",
        action="append",
        default=[],
        help="folder of local dataset copies where a run's Hub datasets are looked for (repeatable; default "
        "the harness data folder)",
    )
    vw.set_defaults(func=_cmd_view)


def _cmd_view(args: argparse.Namespace) -> int:
    for module in VIEW_MODULES:
        require(module, "view", "harness view")
    from harness.viewer.app import ViewOptions, serve

    data_dirs = [Path(d) for d in args.data_dir] or [default_data_dir()]
    serve(
        ViewOptions(
            folders=[Path(f) for f in args.folders],
            host=args.host,
            port=args.port,
            cache=Path(args.index_dir) if args.index_dir else None,
            data_dirs=tuple(data_dirs),
        )
    )
    return 0
