"""One table per protocol: a row per submission, a column per task metric, each cell the server's value
with its 95% confidence interval (value ± 1.96 stderr, the stderr ``results.json`` reports)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from harness.leaderboard.db import Submission
from harness.leaderboard.records import Z95
from harness.protocols.base import protocols

SIZE_BUCKETS = ((1e9, "< 1B"), (4e9, "1-4B"), (10e9, "4-10B"), (40e9, "10-40B"), (float("inf"), "> 40B"))


@dataclass(frozen=True)
class Column:
    task: str
    metric: str
    higher_is_better: bool | None

    @property
    def key(self) -> str:
        return f"{self.task}/{self.metric}"

    @property
    def label(self) -> str:
        metric, _, filt = self.metric.partition(",")
        return f"{self.task} {metric}" + ("" if filt in ("", "none") else f" ({filt})")


@dataclass(frozen=True)
class Cell:
    """A figure with its 95% CI and its coverage: n scored samples, errored samples, and samples whose
    answer the metric could not parse."""

    value: float | None
    low: float | None
    high: float | None
    n: int | None
    status: str
    errors: int | None = None
    unparsed: int | None = None


@dataclass(frozen=True)
class Row:
    id: int
    model: str
    family: str
    parameters: int | None
    size: str
    access: str
    status: str
    submitter: str
    submitted_at: str
    smoke_test_model: bool
    cells: dict[str, Cell]


@dataclass(frozen=True)
class Table:
    protocol: str
    columns: list[Column]
    rows: list[Row]


def size_bucket(parameters: int | None) -> str:
    if parameters is None:
        return "unknown"
    return next(label for limit, label in SIZE_BUCKETS if parameters < limit)


def _table_key(name: str, order: list[str]) -> tuple[int, str]:
    return (order.index(name) if name in order else len(order), name)


def protocol_tables(records: list[Submission]) -> list[Table]:
    """The tables: the registered protocols' by name, then the tables of tasks of no protocol (named for
    their group, or ``other``); within a table, groups (a protocol's overall figure) first."""
    order = [p.name for p in protocols()]
    columns: dict[str, dict[str, Column]] = {}
    groups: set[str] = set()
    for record in records:
        for s in record.scores:
            columns.setdefault(s.protocol, {}).setdefault(f"{s.task}/{s.metric}",
                                                          Column(s.task, s.metric, s.higher_is_better))
            if s.version == "group":
                groups.add(s.task)
    tables = []
    for protocol in sorted(columns, key=lambda name: _table_key(name, order)):
        cols = sorted(columns[protocol].values(), key=lambda c: (c.task not in groups, c.task, c.metric))
        rows = []
        for record in records:
            cells = {f"{s.task}/{s.metric}": _cell(s, record) for s in record.scores if s.protocol == protocol}
            if not cells:
                continue
            rows.append(Row(id=record.id, model=record.model, family=record.family or "unknown",
                            parameters=record.parameters, size=size_bucket(record.parameters), access=record.access,
                            status=record.status, submitter=record.submitter,
                            submitted_at=record.submitted_at.strftime("%Y-%m-%d %H:%M"),
                            smoke_test_model=record.smoke_test_model, cells=cells))
        tables.append(Table(protocol, cols, rows))
    return tables


def coverage_of(record: Submission, task: str, metric: str) -> tuple[int | None, int | None]:
    """(errored samples, samples the metric could not parse) behind one figure of a record, from the
    server's counts; a group's are its member tasks' sums."""
    counts = record.recomputed.get("counts", {})
    members = record.claimed.get("group_subtasks", {}).get(task) if task not in counts else [task]
    rows = [counts[m] for m in members or [] if m in counts]
    if not rows:
        return None, None
    return sum(r["errors"] for r in rows), sum(r.get("unparsed", {}).get(metric, 0) for r in rows)


def _cell(score: Any, record: Submission) -> Cell:
    errors, unparsed = coverage_of(record, score.task, score.metric)
    if score.value is None or score.stderr is None:
        return Cell(score.value, None, None, score.n, score.status, errors, unparsed)
    return Cell(score.value, score.value - Z95 * score.stderr, score.value + Z95 * score.stderr, score.n, score.status,
                errors, unparsed)


_FIXED = ["id", "model", "family", "parameters", "size", "access", "status", "submitter", "submitted_at"]


def table_json(table: Table) -> dict[str, Any]:
    return {
        "protocol": table.protocol,
        "ci": "95% normal interval: value ± 1.96 stderr",
        "columns": [{"key": c.key, "task": c.task, "metric": c.metric, "higher_is_better": c.higher_is_better}
                    for c in table.columns],
        "rows": [{**{k: getattr(r, k) for k in _FIXED}, "smoke_test_model": r.smoke_test_model,
                  "cells": {k: c.__dict__ for k, c in r.cells.items()}} for r in table.rows],
    }


def spreadsheet_safe(value: Any) -> Any:
    """Keep a spreadsheet from reading a submitted string as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def table_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = list(_FIXED)
    for c in table.columns:
        header += [c.key, f"{c.key} ci_low", f"{c.key} ci_high", f"{c.key} n", f"{c.key} errors",
                   f"{c.key} unparsed", f"{c.key} status"]
    writer.writerow(header)
    for r in table.rows:
        line = [spreadsheet_safe(getattr(r, k)) for k in _FIXED]
        for c in table.columns:
            cell = r.cells.get(c.key)
            line += ([cell.value, cell.low, cell.high, cell.n, cell.errors, cell.unparsed, cell.status] if cell
                     else [""] * 7)
        writer.writerow(line)
    return buffer.getvalue()
