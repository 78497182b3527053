"""The typed, versioned ``audit.json`` that a protocol's audit writes and its readers read back.

Each protocol with an audit declares its report class on its ``Protocol`` (``audit_report``), a subclass of
:class:`AuditReport` in its own package (``harness/protocols/<name>/audit_report.py``), so generic code reads
any protocol's audit through the registry (``Protocol.read_audit``). A report keeps the keys audit.json
had before it was versioned and adds ``schema_version``; a file without one is read as version 1. Change
a report by bumping its ``SCHEMA_VERSION`` (and the field's default) and keeping its old versions readable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from harness.disk import disk_problem, is_disk_error, write_atomic
from harness.errors import HarnessError
from harness.results.interval import Interval, plural
from harness.results.jsonl import check_depth

AUDIT_FILE = "audit.json"


class ReportPart(BaseModel):
    """A typed part of an audit report: unknown keys are refused, and keys that are not Python names
    (``Aligned``, ``divergent-content``) are field aliases, written and read under those spellings."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, ser_json_inf_nan="constants")


class AuditReport(ReportPart):
    """The base of every protocol's audit report: its schema version and how it is written and read."""

    SCHEMA_VERSION: ClassVar[int] = 1
    READABLE_VERSIONS: ClassVar[tuple[int, ...]] = (1,)

    schema_version: int = 1

    def to_json(self) -> str:
        """``audit.json`` as written: every field typed (nothing turned into a string on the way), indented."""
        return self.model_dump_json(by_alias=True, indent=2) + "\n"

    def write(self, out_dir: Path) -> Path:
        """Write ``out_dir/audit.json`` (replaced atomically, so a reader sees the old report or the new one)
        and return its path; a full, over-quota or read-only disk is one line naming the file."""
        path = Path(out_dir) / AUDIT_FILE
        text = self.to_json()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        except OSError as exc:
            if not is_disk_error(exc):
                raise
            raise HarnessError(disk_problem(path, exc, len(text.encode()))) from None
        return path

    @classmethod
    def parse(cls, raw: Any) -> Self:
        """An audit mapping of any readable version as the current report; one without ``schema_version``
        is version 1 (the files written before reports were versioned)."""
        if isinstance(raw, dict):  # anything else fails validation below, as not an audit report
            version = raw.get("schema_version", 1)
            if version not in cls.READABLE_VERSIONS:
                readable = ", ".join(map(str, cls.READABLE_VERSIONS))
                raise HarnessError(f"schema_version {version!r}; this harness reads version(s) {readable}")
            raw = {**raw, "schema_version": cls.SCHEMA_VERSION}
        return cls.model_validate(raw)

    @classmethod
    def read(cls, path: Path) -> Self:
        """The report in ``path`` (an audit.json, or the audit folder holding one); a missing, malformed or
        unknown-version file fails in one line naming it."""
        path = Path(path)
        if path.is_dir():
            path = path / AUDIT_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HarnessError(f"{path}: no audit report there (run harness audit first)") from None
        except (OSError, ValueError) as exc:  # ValueError: UnicodeDecodeError
            raise HarnessError(f"{path}: unreadable ({exc})") from None
        check_depth(text, str(path))
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise HarnessError(f"{path}: not valid JSON ({exc}); the file is truncated or corrupt") from None
        try:
            return cls.parse(raw)
        except ValidationError as exc:
            raise HarnessError(f"{path}: not a {cls.__name__} ({first_problem(exc)})") from None
        except HarnessError as exc:
            raise HarnessError(f"{path}: {exc}") from None


def first_problem(exc: ValidationError) -> str:
    """The first thing pydantic found wrong, as ``where: what``."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


def with_interval(value: float | None, interval: Interval | None, digits: int = 3) -> str:
    """A figure as the audits' tables print it: ``0.310 [0.220, 0.400]``; ``-`` for no value, and the
    value alone when there is no interval (an older report) or ``0.310 (no interval: fewer than 2 ...)``."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    if interval is None:
        return text
    if not interval.defined:
        return f"{text} (no interval: {interval.reason or 'not computed'})"
    return f"{text} {interval.text(digits)}"


def interval_note(intervals: list[Interval | None]) -> str:
    """The line under a table that says how its intervals were made (``Intervals: 95% CIs, cluster_bootstrap
    over queries.``), from the first defined one (one table, one method and unit; each row's n is its
    own); empty without any."""
    found = next((i for i in intervals if i is not None and i.defined), None)
    return f"Intervals: {found.level:.0%} CIs, {found.method} over {plural(found.unit)}." if found else ""
