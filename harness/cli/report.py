"""``harness report``: one model's audit across the protocols as a self-contained HTML page and its JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness report --model M PATH ... --output audit.html``."""
    from harness.protocols.evidence import DEFAULT_ITEMS

    rp = sub.add_parser(
        "report",
        parents=[common],
        help="one model's audit across the protocols: a self-contained HTML page and the same as JSON",
    )
    rp.add_argument(
        "paths",
        nargs="+",
        help="run folders, audit folders, or folders holding them (other models' runs are read as peers)",
    )
    rp.add_argument(
        "--data-dir",
        help="where the datasets are (their images are shown), when not where the runs recorded them",
    )
    rp.add_argument("--model", help="the model the report is about, as its runs name it (default: the only one)")
    rp.add_argument(
        "--output",
        "--out",
        dest="out",
        default="audit.html",
        help="the HTML file to write; the JSON goes beside it (default audit.html)",
    )
    rp.add_argument(
        "--max-items",
        type=int,
        default=DEFAULT_ITEMS,
        help=f"cases shown per evidence section, strongest first (default {DEFAULT_ITEMS})",
    )
    rp.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    """Builds the report and prints where it was written and what it holds."""
    from harness.errors import HarnessError
    from harness.report import ReportOptions, build_report, write_report

    if args.max_items < 1:
        raise HarnessError(f"--max-items {args.max_items}: give 1 or more")
    paths = [Path(p) for p in args.paths]
    data_dir = Path(args.data_dir) if args.data_dir else None
    doc = build_report(ReportOptions(paths=paths, model=args.model, max_items=args.max_items, data_dir=data_dir))
    html, data, missing = write_report(doc, paths, Path(args.out))
    print(f"report of {doc.model}: {', '.join(p.title for p in doc.protocols) or 'no protocol'}")
    for item in doc.not_run:
        print(f"  not run: {item.protocol}: {item.reason}")
    if missing:
        print(f"  {missing} image(s) not found (their dataset folders or run files are not where the runs say)")
    print(f"wrote {html} and {data}")
    return 0
