"""A run's samples, indexed once in SQLite so that a page of 100,000 samples is a query, not a file read.

One index file per run folder, in a cache folder (``<cache>/viewer/``, or one the user names), never in
the run folder unless that is the folder named. It holds, per sample line: its task, byte offset and
length in ``samples_<task>.jsonl``, and the columns the pages filter and sort on (doc id, error kind,
each metric's value, a lower-cased search text, digests of the answers and metrics that side-by-side
views compare). A page reads its 50 lines by offset. The index records each samples file's size and
modification time and is rebuilt (into a new file, swapped in whole) when any of them changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import tempfile
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from harness.errors import HarnessError
from harness.models.messages import from_lmms
from harness.results.jsonl import MAX_JSON_DEPTH, check_depth
from harness.results.schema import SampleRecord

#: Bump when the tables change: an index of another version is rebuilt.
INDEX_VERSION = 2
#: How many queries' matching ids a run's index keeps (8 bytes a sample: 800 kB each at 100,000 samples).
CACHED_QUERIES = 16
#: A sample line longer than this is indexed as unreadable rather than read into memory.
MAX_LINE_BYTES = 32 << 20
#: How much of a sample's text the search column keeps (a long answer is searched in its first part).
MAX_SEARCH_CHARS = 20_000
#: The error kind of a line that is not a sample record (a damaged or edited file).
UNREADABLE = "unreadable line"
NO_ERROR = "none"

MetricOp = Literal["any", "eq", "ne", "lt", "le", "gt", "ge", "missing"]
METRIC_OPS: dict[str, str] = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
SortOrder = Literal["doc", "-doc", "metric", "-metric", "error"]

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE samples(
    id INTEGER PRIMARY KEY, task TEXT NOT NULL, line INTEGER NOT NULL, offset INTEGER NOT NULL,
    length INTEGER NOT NULL, doc_id INTEGER, doc_hash TEXT, error_kind TEXT NOT NULL,
    answer_sig TEXT, metric_sig TEXT, problem TEXT);
CREATE TABLE texts(sample INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE metrics(sample INTEGER NOT NULL, key TEXT NOT NULL, value REAL);
"""
_INDEXES = """
CREATE INDEX samples_doc ON samples(task, doc_id);
CREATE INDEX samples_compare ON samples(task, doc_hash, metric_sig, answer_sig, doc_id);
CREATE INDEX samples_error ON samples(task, error_kind, doc_id);
CREATE INDEX metrics_key ON metrics(key, value, sample);
CREATE INDEX metrics_sample ON metrics(sample, key, value);
CREATE TABLE error_counts AS SELECT task, error_kind, COUNT(*) AS n FROM samples GROUP BY task, error_kind;
CREATE TABLE metric_keys AS SELECT DISTINCT s.task, m.key FROM metrics m JOIN samples s ON s.id = m.sample;
"""


@dataclass(frozen=True)
class SampleQuery:
    """What a samples page asks for: one task, optional filters, an order and a page (1-based)."""

    task: str
    search: str = ""
    error: str = ""  # "" any; NO_ERROR none; else an error kind
    metric: str = ""  # a "metric,filter" key: the one the metric filter and the metric sort use
    op: MetricOp = "any"
    value: float | None = None
    sort: SortOrder = "doc"
    page: int = 1
    per_page: int = 50


@dataclass(frozen=True)
class SampleRef:
    """Where one sample line is: its index row id, task, line number, byte offset and length."""

    id: int
    task: str
    line: int
    offset: int
    length: int
    problem: str | None = None


@dataclass(frozen=True)
class SamplePage:
    """One page of matching samples and how many match in all."""

    refs: list[SampleRef]
    total: int


@dataclass(frozen=True)
class TaskSummary:
    """A task as the index counts it: samples, per error kind, and the metric keys its samples hold."""

    samples: int
    errors: dict[str, int]
    metrics: list[str]


def index_path(cache: Path, run_dir: Path) -> Path:
    """The index file of ``run_dir`` in ``cache`` (named by a digest of the run's resolved path)."""
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:24]
    return cache / f"{digest}.sqlite"


class SampleIndex:
    """The index of one run folder's samples files; built when first opened and rebuilt when they change."""

    def __init__(self, run_dir: Path, tasks: Sequence[str], cache: Path) -> None:
        self.run_dir = run_dir
        self.files = {task: run_dir / f"samples_{task}.jsonl" for task in tasks}
        self.path = index_path(cache, run_dir)
        self._lock = threading.Lock()
        self._matches: OrderedDict[tuple[Any, ...], array[int]] = OrderedDict()
        self._matches_lock = threading.Lock()

    def _signature(self) -> str:
        parts = {}
        for task, path in sorted(self.files.items()):
            try:
                stat = path.stat()
            except OSError:
                continue
            parts[task] = [stat.st_size, stat.st_mtime_ns]
        return json.dumps({"version": INDEX_VERSION, "files": parts}, sort_keys=True)

    def _stored_signature(self) -> str | None:
        if not self.path.is_file():
            return None
        try:
            with contextlib.closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)) as db:
                row = db.execute("SELECT value FROM meta WHERE key = 'signature'").fetchone()
        except sqlite3.Error:
            return None
        return str(row[0]) if row else None

    def ensure(self) -> bool:
        """Build the index unless an up-to-date one exists; whether it was (re)built."""
        signature = self._signature()
        if self._stored_signature() == signature:
            return False
        with self._lock:
            if self._stored_signature() == signature:
                return False
            self._build(signature)
            return True

    def _build(self, signature: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.stem + ".", suffix=".building")
        os.close(fd)
        try:
            with contextlib.closing(sqlite3.connect(tmp)) as db:
                db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + _SCHEMA)
                for task, path in self.files.items():
                    if path.is_file():
                        _index_file(db, task, path)
                db.executescript(_INDEXES)
                db.execute("INSERT INTO meta VALUES ('signature', ?)", (signature,))
                db.commit()
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection to the up-to-date index."""
        self.ensure()
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        try:
            yield db
        finally:
            db.close()

    def summary(self, task: str) -> TaskSummary:
        """The task's sample count, errors by kind and metric keys."""
        with self.connect() as db:
            errors = dict(db.execute("SELECT error_kind, n FROM error_counts WHERE task = ?", (task,)).fetchall())
            keys = [row[0] for row in db.execute("SELECT key FROM metric_keys WHERE task = ? ORDER BY key", (task,))]
        samples = sum(errors.values())
        errors.pop(NO_ERROR, None)
        return TaskSummary(samples, errors, keys)

    def query(self, q: SampleQuery) -> SamplePage:
        """The page ``q`` asks for: ``per_page`` samples from ``(page - 1) * per_page`` of those that match,
        in order. The matching ids of the last few queries are kept, so paging through a filtered or
        searched task reads one page, not the whole task again."""
        key = (self._signature(), q.task, q.search, q.error, q.metric, q.op, q.value, q.sort)
        with self._matches_lock:
            ids = self._matches.get(key)
            if ids is not None:
                self._matches.move_to_end(key)
        if ids is None:
            ids = self._matching(q)
            with self._matches_lock:
                self._matches[key] = ids
                while len(self._matches) > CACHED_QUERIES:
                    self._matches.popitem(last=False)
        start = (max(q.page, 1) - 1) * q.per_page
        chosen = list(ids[start : start + q.per_page])
        refs = self.refs(chosen)
        return SamplePage([refs[i] for i in chosen if i in refs], len(ids))

    def _matching(self, q: SampleQuery) -> array[int]:
        """The ids of every sample ``q`` matches, in its order (filters and order in SQL)."""
        where, params, joins = ["s.task = ?"], [q.task], ""
        if q.error:
            where.append("s.error_kind = ?")
            params.append(q.error)
        if q.search:
            joins += " JOIN texts t ON t.sample = s.id"
            where.append("instr(t.text, ?) > 0")
            params.append(q.search.casefold())
        if q.metric and (q.op != "any" or q.sort in ("metric", "-metric")):
            joins += " LEFT JOIN metrics m ON m.sample = s.id AND m.key = ?"
            params.insert(0, q.metric)
            if q.op == "missing":
                where.append("m.value IS NULL")
            elif q.op in METRIC_OPS and q.value is not None and math.isfinite(q.value):
                where.append(f"m.value {METRIC_OPS[q.op]} ?")
                params.append(str(q.value))
        order = {
            "doc": "s.doc_id, s.id",
            "-doc": "s.doc_id DESC, s.id DESC",
            "error": "s.error_kind = 'none', s.error_kind, s.doc_id, s.id",
            "metric": "m.value IS NULL, m.value, s.doc_id, s.id",
            "-metric": "m.value IS NULL, m.value DESC, s.doc_id, s.id",
        }[q.sort if q.metric or not q.sort.endswith("metric") else "doc"]
        with self.connect() as db:
            rows = db.execute(f"SELECT s.id FROM samples s{joins} WHERE {' AND '.join(where)} ORDER BY {order}", params)
            return array("q", (row[0] for row in rows))

    def refs(self, ids: Sequence[int]) -> dict[int, SampleRef]:
        """The sample lines with those index row ids, by id (ids not in the index are left out)."""
        if not ids:
            return {}
        with self.connect() as db:
            rows = db.execute(
                f"SELECT id, task, line, offset, length, problem FROM samples WHERE id IN ({','.join('?' * len(ids))})",
                list(ids),
            ).fetchall()
        return {row[0]: SampleRef(*row) for row in rows}

    def read(self, ref: SampleRef) -> SampleRecord | str:
        """The sample record at ``ref``, read by its offset; a line that is not one is its one-line problem."""
        if ref.problem:
            return ref.problem
        with self.files[ref.task].open("rb") as fh:
            fh.seek(ref.offset)
            raw = fh.read(ref.length)
        record = _parse(raw, ref.line)
        return record if isinstance(record, SampleRecord) else f"line {ref.line}: {record}"


def _parse(raw: bytes, line: int) -> SampleRecord | str:
    """One samples line as a record, or why it is not one (the same checks as ``read_samples``)."""
    try:
        text = raw.decode("utf-8")
        check_depth(text, f"line {line}", MAX_JSON_DEPTH)
        return SampleRecord.model_validate_json(text)
    except UnicodeDecodeError:
        return "not UTF-8"
    except HarnessError as exc:
        return str(exc)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"not a sample record ({where + ': ' if where else ''}{error['msg']})"


def _index_file(db: sqlite3.Connection, task: str, path: Path) -> None:
    """Index every line of one samples file (streamed: memory stays bounded by one line)."""
    offset = 0
    batch_samples: list[tuple[Any, ...]] = []
    batch_texts: list[tuple[int, str]] = []
    batch_metrics: list[tuple[int, str, float | None]] = []
    next_id = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM samples").fetchone()[0]) + 1
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):  # binary lines end at b"\n" only, as JSONL does
            length = len(raw)
            stripped = raw.rstrip(b"\r\n")
            if stripped.strip():
                row_id = next_id
                next_id += 1
                record = _parse(stripped, number) if length <= MAX_LINE_BYTES else "longer than the viewer reads"
                if isinstance(record, SampleRecord):
                    batch_samples.append(_sample_row(row_id, task, number, offset, len(stripped), record))
                    batch_texts.append((row_id, search_text(record)))
                    batch_metrics.extend((row_id, key, _number(v)) for key, v in record.metrics.items())
                else:
                    problem = f"line {number}: {record}"
                    batch_samples.append(
                        (row_id, task, number, offset, len(stripped), None, None, UNREADABLE, None, None, problem)
                    )
            offset += length
            if len(batch_samples) >= 5000:
                _flush(db, batch_samples, batch_texts, batch_metrics)
    _flush(db, batch_samples, batch_texts, batch_metrics)


def _flush(
    db: sqlite3.Connection,
    samples: list[tuple[Any, ...]],
    texts: list[tuple[int, str]],
    metrics: list[tuple[int, str, float | None]],
) -> None:
    db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", samples)
    db.executemany("INSERT INTO texts VALUES (?, ?)", texts)
    db.executemany("INSERT INTO metrics VALUES (?, ?, ?)", metrics)
    samples.clear()
    texts.clear()
    metrics.clear()


def _sample_row(row_id: int, task: str, line: int, offset: int, length: int, record: SampleRecord) -> tuple[Any, ...]:
    kind = record.error.kind if record.error else NO_ERROR
    return (row_id, task, line, offset, length, record.doc_id, record.doc_hash, kind, *signatures(record), None)


def signatures(record: SampleRecord) -> tuple[str, str]:
    """Digests of a sample's filtered answers and of its metric values: two models' samples of one doc
    differ in their answers or their scores when these differ (what the side-by-side view sorts first).
    Both are JSON values read from a samples file, whose ``repr`` is canonical for a given key order (the
    task's code writes the keys of every run in the same order)."""
    return (
        hashlib.sha256(repr(record.filtered).encode()).hexdigest()[:16],
        hashlib.sha256(repr(record.metrics).encode()).hexdigest()[:16],
    )


def _number(value: Any) -> float | None:
    """A metric value as a number the filters compare (a bool as 0/1); None for a missing or non-numeric one."""
    if isinstance(value, bool | int | float) and math.isfinite(float(value)):
        return float(value)
    return None


def prompt_text(record: SampleRecord) -> str:
    """The text of a sample's prompt, a line per message (images are shown apart); a prompt that is not
    in lmms-eval's message format shows as its JSON."""
    try:
        return "\n".join(message.text for message in from_lmms(record.prompt))
    except ValueError:
        return json.dumps(record.prompt, ensure_ascii=False)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def search_text(record: SampleRecord) -> str:
    """What a text search looks in: prompt, answers, filtered answers, target, doc, error (case-folded)."""
    parts = [
        prompt_text(record),
        *record.responses,
        *(_text(v) for v in record.filtered.values()),
        _text(record.target),
        _text(record.doc),
        str(record.error or ""),
    ]
    return "\n".join(parts)[:MAX_SEARCH_CHARS].casefold()


@dataclass(frozen=True)
class CompareRow:
    """One doc across several runs: its sample id in each (None where a run lacks it), and whether the
    runs' scores or filtered answers differ on it."""

    ids: list[int | None]
    scores_differ: bool
    answers_differ: bool


def compare(indexes: Sequence[SampleIndex], task: str, page: int, per_page: int) -> tuple[list[CompareRow], int, int]:
    """One page of a task's docs across several runs, matched by doc hash: docs whose scores differ first,
    then those whose answers differ. Returns the rows, the number of docs (those of the first run) and how
    many differ."""
    if not 2 <= len(indexes) <= 9:
        raise HarnessError(f"compare 2 to 9 runs side by side, not {len(indexes)}")
    for index in indexes:
        index.ensure()
    db = sqlite3.connect(f"file:{indexes[0].path}?mode=ro", uri=True)
    try:
        for i, index in enumerate(indexes[1:], 1):
            db.execute(f"ATTACH DATABASE ? AS r{i}", (f"file:{index.path}?mode=ro",))
        others = range(1, len(indexes))
        joins = "".join(
            f" LEFT JOIN r{i}.samples s{i} ON s{i}.task = s0.task AND s{i}.doc_hash = s0.doc_hash" for i in others
        )
        scores = " OR ".join(f"s{i}.metric_sig IS NOT s0.metric_sig" for i in others)
        answers = " OR ".join(f"s{i}.answer_sig IS NOT s0.answer_sig" for i in others)
        ids = ", ".join(f"s{i}.id" for i in range(len(indexes)))
        base = f"FROM samples s0{joins} WHERE s0.task = ? AND s0.doc_hash IS NOT NULL"
        total, differing = db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(({scores}) OR ({answers})), 0) {base}", (task,)
        ).fetchone()
        rows = db.execute(
            f"SELECT ({scores}), ({answers}), {ids} {base} ORDER BY 1 DESC, 2 DESC, s0.doc_id, s0.id LIMIT ? OFFSET ?",
            (task, per_page, (max(page, 1) - 1) * per_page),
        ).fetchall()
    finally:
        db.close()
    return [CompareRow(list(row[2:]), bool(row[0]), bool(row[1])) for row in rows], int(total), int(differing)
