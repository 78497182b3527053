"""Where the harness keeps things: its cache (tiny models, datasets, the response store) and the names of
the folders it writes (run folders, audit folders), so every command spells them the same way."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

CACHE_ENV = "HARNESS_CACHE"
STAMP_FORMAT = "%Y%m%d-%H%M%S"


def cache_root() -> Path:
    """``$HARNESS_CACHE``, else ``~/.cache/harness``."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "harness"))


def default_store_path() -> Path:
    """The response store shared by ``harness eval``, the audits, the judges and the builders."""
    return cache_root() / "responses.sqlite"


def utc_stamp(at: float | None = None) -> str:
    """``YYYYmmdd-HHMMSS`` in UTC, of ``at`` (a POSIX time) or of now: the suffix of every output folder."""
    when = datetime.now(UTC) if at is None else datetime.fromtimestamp(at, UTC)
    return when.strftime(STAMP_FORMAT)


def slug(text: str) -> str:
    """``text`` made safe as one folder name (a model spec such as ``hf:org/name``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "__", text).strip("_")[:120]


def new_run_dir(output: Path, model_spec: str, started: float) -> Path:
    """``output/<model>/<UTC timestamp>``, created; suffixed when two runs start in the same second."""
    stamp = utc_stamp(started)
    run_dir = output / slug(model_spec) / stamp
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = output / slug(model_spec) / f"{stamp}-{suffix}"
    run_dir.mkdir(parents=True)
    return run_dir


def audit_dir(parent: Path, name: str) -> Path:
    """``parent/audit-<name>-<UTC timestamp>`` (not created): where an audit writes when no folder is given."""
    return parent / f"audit-{name}-{utc_stamp()}"
