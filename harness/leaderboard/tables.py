"""One table per protocol: a row per submission and a column per headline figure the protocol's
leaderboard hooks declare (the figures its paper reports), each cell the server's value with its 95% CI
clipped to the figure's range, and n. A table of tasks with no headline figures (tasks of no protocol)
has a column per task metric instead, with value ± 1.96 stderr (the stderr ``results.json`` reports).
The raw per-metric figures of every task are on the model page. A run made under flags that override its
tasks' generation settings carries them in its row (``settings``), in every table, CSV and JSON."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from harness.engine.settings import RunFlags
from harness.leaderboard.checks import worst
from harness.leaderboard.db import Submission
from harness.leaderboard.hooks import board_protocols
from harness.leaderboard.protocol_parts import BoardParts
from harness.leaderboard.public import redact, shown_name
from harness.leaderboard.records import Z95
from harness.protocols.leaderboard_hooks import Estimate, Figure
from harness.results.metric_key import label_of
from harness.results.schema import RunConfig
from harness.results.spreadsheet import spreadsheet_safe

SIZE_BUCKETS = ((1e9, "< 1B"), (4e9, "1-4B"), (10e9, "4-10B"), (40e9, "10-40B"), (float("inf"), "> 40B"))


@dataclass(frozen=True)
class Column:
    """A headline figure, or (``task`` set) a raw task metric ``metric,filter``."""

    key: str
    label: str
    higher_is_better: bool | None
    task: str | None = None
    metric: str | None = None


def _metric_column(task: str, metric: str, higher_is_better: bool | None) -> Column:
    """The column of a task's metric (``metric,filter``; a filter other than ``none`` shows in the label)."""
    return Column(f"{task}/{metric}", f"{task} {label_of(metric)}", higher_is_better, task, metric)


@dataclass(frozen=True)
class Cell:
    """A figure with its 95% CI and its coverage: n scored samples, errored samples, and samples whose
    answer the metric could not parse. ``interval`` says how a headline figure's CI was made (its method
    and unit, ``Interval.label``) or why it has none."""

    value: float | str | None
    low: float | None
    high: float | None
    n: int | None
    status: str
    errors: int | None = None
    unparsed: int | None = None
    interval: str | None = None


@dataclass(frozen=True)
class Row:
    """One submission's line of a table: the model's traits, the record's status and its cells by column key."""

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
    settings: str = ""  # the flags that overrode the tasks' generation settings (empty: the tasks' own)


@dataclass(frozen=True)
class Table:
    """``protocol`` names the table (a protocol, or a group of tasks of no protocol); ``summary`` and
    ``card`` give its "what this measures" line."""

    protocol: str
    columns: list[Column]
    rows: list[Row]
    title: str = ""
    summary: str = ""
    card: str | None = None
    scope: str = ""  # how the board's figures differ from the protocol's audit (the hooks' ``scope``)


def size_bucket(parameters: int | None) -> str:
    """The size bucket of a parameter count (``unknown`` without one)."""
    if parameters is None:
        return "unknown"
    return next(label for limit, label in SIZE_BUCKETS if parameters < limit)


def _table_key(name: str, order: list[str]) -> tuple[int, str]:
    return (order.index(name) if name in order else len(order), name)


def protocol_tables(records: list[Submission], parts: BoardParts | None = None) -> list[Table]:
    """The tables: the registered protocols' by name, then the tables of tasks of no protocol (named for
    their group, or ``other``). ``parts`` adds the figures that depend on other submissions."""
    hooks = {p.name: (p, h) for p, h in board_protocols()}
    order = list(hooks)
    names = sorted({s.protocol for r in records for s in r.scores}, key=lambda name: _table_key(name, order))
    tables = []
    for name in names:
        mine = [r for r in records if any(s.protocol == name for s in r.scores)]
        protocol, found = hooks.get(name, (None, None))
        if found is not None and found.figures:
            pooled = (parts.pooled if parts else {}).get(name, {})
            columns = [Column(f.key, f.label, f.higher_is_better) for f in found.figures]
            rows = [_row(r, _headline_cells(r, name, found.figures, pooled.get(r.id, {}))) for r in mine]
        else:
            columns, rows = _metric_table(mine, name)
        tables.append(
            Table(
                name,
                columns,
                rows,
                title=protocol.title if protocol else name,
                summary=protocol.summary if protocol else "",
                card=found.card if found else None,
                scope=found.scope if found else "",
            )
        )
    return tables


def _row(record: Submission, cells: dict[str, Cell]) -> Row:
    return Row(
        id=record.id,
        model=str(shown_name(record.model)),
        family=shown_name(record.family) or "unknown",
        parameters=record.parameters,
        size=size_bucket(record.parameters),
        access=str(shown_name(record.access)),
        status=record.status,
        submitter=str(shown_name(record.submitter)),
        submitted_at=record.submitted_at.strftime("%Y-%m-%d %H:%M"),
        smoke_test_model=record.smoke_test_model,
        cells=cells,
        settings=settings_of(record),
    )


def settings_of(record: Submission) -> str:
    """The flags a submission's run declares that override its tasks' generation settings, as typed
    (``--gen-kwargs max_new_tokens=1``), paths cut; empty for a run made with the tasks' own settings. The
    server verified the run's requests against exactly these flags."""
    try:
        config = RunConfig.model_validate(record.claimed.get("config", {}))
    except ValidationError:
        return ""
    return redact(RunFlags.of_run(config).describe())


def _metric_table(records: list[Submission], name: str) -> tuple[list[Column], list[Row]]:
    """A column per task metric (groups, a protocol's overall figure, first) and a row per record."""
    columns: dict[str, Column] = {}
    groups = {s.task for r in records for s in r.scores if s.protocol == name and s.version == "group"}
    for record in records:
        for s in record.scores:
            if s.protocol == name:
                columns.setdefault(f"{s.task}/{s.metric}", _metric_column(s.task, s.metric, s.higher_is_better))
    ordered = sorted(columns.values(), key=lambda c: (c.task not in groups, c.task, c.metric))
    rows = [_row(r, {f"{s.task}/{s.metric}": _cell(s, r) for s in r.scores if s.protocol == name}) for r in records]
    return ordered, rows


def _headline_cells(
    record: Submission, name: str, figures: tuple[Figure, ...], pooled: dict[str, Estimate]
) -> dict[str, Cell]:
    """The record's headline figures (stored when it was re-scored, or pooled), intervals clipped to each
    figure's range; every cell carries the protocol's task state, its errored samples and, per task, the
    most answers one metric could not parse."""
    stored = record.recomputed.get("headlines", {}).get(name, {})
    scores = [s for s in record.scores if s.protocol == name and s.version != "group"]
    status = worst({s.status for s in scores})
    counts = record.recomputed.get("counts", {})
    tasks = {s.task for s in scores}
    errors = sum(counts[t]["errors"] for t in tasks if t in counts)
    unparsed = sum(max(counts[t].get("unparsed", {}).values(), default=0) for t in tasks if t in counts)
    cells = {}
    for figure in figures:
        found = pooled.get(figure.key) or (Estimate.from_json(stored[figure.key]) if figure.key in stored else None)
        if found is None:
            continue
        found = found.clipped(figure)
        interval = found.interval
        low, high = (interval.low, interval.high) if interval else (None, None)
        how = None if interval is None else interval.label() if interval.defined else interval.text()
        cells[figure.key] = Cell(found.value, low, high, found.n, status, errors, unparsed, how)
    return cells


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
    return Cell(
        score.value,
        score.value - Z95 * score.stderr,
        score.value + Z95 * score.stderr,
        score.n,
        score.status,
        errors,
        unparsed,
    )


_FIXED = ["id", "model", "family", "parameters", "size", "access", "status", "settings", "submitter", "submitted_at"]


def table_json(table: Table) -> dict[str, Any]:
    """A table as JSON: its columns, rows and cells (values, 95% intervals, coverage)."""
    return {
        "protocol": table.protocol,
        "ci": "95% interval (headline figures: the protocol's own, each cell's interval names its method and "
        "unit; task metrics: value ± 1.96 stderr), clipped to the figure's range",
        "title": table.title,
        "summary": table.summary,
        "scope": table.scope,
        "columns": [
            {"key": c.key, "label": c.label, "task": c.task, "metric": c.metric, "higher_is_better": c.higher_is_better}
            for c in table.columns
        ],
        "rows": [
            {
                **{k: getattr(r, k) for k in _FIXED},
                "smoke_test_model": r.smoke_test_model,
                "cells": {k: c.__dict__ for k, c in r.cells.items()},
            }
            for r in table.rows
        ],
    }


def table_csv(table: Table) -> str:
    """A table as CSV: the fixed fields, then each column's value, interval, coverage and status;
    text cells made safe for spreadsheets."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = list(_FIXED)
    for c in table.columns:
        header += [
            c.key,
            f"{c.key} ci_low",
            f"{c.key} ci_high",
            f"{c.key} n",
            f"{c.key} errors",
            f"{c.key} unparsed",
            f"{c.key} status",
            f"{c.key} interval",
        ]
    writer.writerow(header)
    for r in table.rows:
        line = [spreadsheet_safe(getattr(r, k)) for k in _FIXED]
        for c in table.columns:
            cell = r.cells.get(c.key)
            line += (
                [cell.value, cell.low, cell.high, cell.n, cell.errors, cell.unparsed, cell.status, cell.interval]
                if cell
                else [""] * 8
            )
        writer.writerow(line)
    return buffer.getvalue()
