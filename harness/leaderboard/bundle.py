"""What a submission carries (results.json, the samples files, the run's plots) and its validation.

The same checks serve the server (uploaded bytes) and the client (a run folder read before upload),
so a submitter sees a refusal before sending anything the server would refuse.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.errors import HarnessError
from harness.results.jsonl import jsonl_lines
from harness.results.schema import READABLE_VERSIONS, RunResults, SampleRecord, parse_run

RESULTS = "results.json"
_SAMPLES = re.compile(r"samples_([A-Za-z0-9._-]{1,200})\.jsonl")
_PLOT = re.compile(r"[A-Za-z0-9._-]{1,200}\.png")


class SubmissionError(HarnessError):
    """A submission the server refuses; ``status`` is the HTTP status that says why."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Limits:
    """Size limits of one submission (bytes and counts); the server's ``--max-upload-mb`` sets the total."""

    max_total_bytes: int = 64 * 2**20
    max_plot_bytes: int = 5 * 2**20
    max_files: int = 200
    max_plot_pixels: int = 25_000_000


@dataclass(frozen=True)
class Bundle:
    """A validated submission."""

    run: RunResults
    samples: dict[str, list[SampleRecord]]
    plots: dict[str, bytes]
    files: dict[str, bytes] = field(repr=False)
    content_hash: str

    @property
    def model(self) -> str:
        """The submitted model's name: the run's ``--model``, else the provenance's, else ``unknown``."""
        return str(self.run.config.model or self.run.provenance.model.model or "unknown")


def _is_bundle_file(name: str) -> bool:
    """Whether a file name is one a submission carries: results.json, samples_<task>.jsonl or a plot."""
    return name == RESULTS or bool(_SAMPLES.fullmatch(name) or _PLOT.fullmatch(name))


def read_run_files(run_dir: Path) -> dict[str, bytes]:
    """The files of a run folder a submission carries: results.json, samples_*.jsonl and *.png."""
    run_dir = Path(run_dir)
    if not (run_dir / RESULTS).is_file():
        raise HarnessError(f"{run_dir}: no results.json (is this a run folder written by harness eval?)")
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file() and _is_bundle_file(p.name)}


def content_hash(run: dict[str, Any], samples: dict[str, list[dict[str, Any]]]) -> str:
    """sha256 of the canonical JSON of results and samples: the identity of a submission."""
    blob = json.dumps({"results": run, "samples": samples}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _check_png(name: str, data: bytes, limits: Limits) -> None:
    from PIL import Image, UnidentifiedImageError

    if len(data) > limits.max_plot_bytes:
        raise SubmissionError(f"{name}: {len(data)} bytes, over the {limits.max_plot_bytes}-byte limit for a plot",
                              413)
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format != "PNG":
                raise SubmissionError(f"{name}: not a PNG image ({image.format})")
            if image.width * image.height > limits.max_plot_pixels:
                raise SubmissionError(f"{name}: {image.width}x{image.height} pixels is too large", 413)
            image.verify()
    except Image.DecompressionBombError:  # PIL refuses to open it at all: far over any plot's size
        raise SubmissionError(f"{name}: too many pixels for a plot (over {limits.max_plot_pixels})", 413) from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise SubmissionError(f"{name}: not a readable PNG image ({exc})") from None


def _json_lines(name: str, data: bytes) -> list[dict[str, Any]]:
    rows = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError(f"{name}: not UTF-8 text") from None
    for lineno, line in jsonl_lines(text):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SubmissionError(f"{name} line {lineno}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise SubmissionError(f"{name} line {lineno}: JSON nested too deeply") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise SubmissionError(f"{name} line {lineno}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise SubmissionError(f"{name} line {lineno}: a sample record must be a JSON object")
        rows.append(row)
    return rows


def _schema_error(name: str, exc: ValidationError) -> SubmissionError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return SubmissionError(f"{name}: {where}: {first['msg']} ({exc.error_count()} schema error(s))")


def _check_files(files: dict[str, bytes], limits: Limits) -> None:
    """Refuses a submission of too many files, too many bytes, unexpected names or no results.json."""
    if len(files) > limits.max_files:
        raise SubmissionError(f"{len(files)} files; a submission carries at most {limits.max_files}", 413)
    total = sum(len(v) for v in files.values())
    if total > limits.max_total_bytes:
        raise SubmissionError(f"the submission is {total} bytes, over the {limits.max_total_bytes}-byte limit", 413)
    unknown = sorted(n for n in files if not _is_bundle_file(n))
    if unknown:
        raise SubmissionError(f"unexpected file(s) {', '.join(map(repr, unknown[:5]))}: a submission carries "
                              "results.json, samples_<task>.jsonl and *.png plots", 400)
    if RESULTS not in files:
        raise SubmissionError("results.json is missing", 400)


def _parse_results(data: bytes) -> tuple[dict[str, Any], RunResults]:
    """results.json as its raw JSON (hashed) and as the run it describes, with an entry for every task."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, an integer of too many digits, too deep
        raise SubmissionError(f"results.json: not JSON ({type(exc).__name__})") from None
    if not isinstance(raw, dict):
        raise SubmissionError("results.json: must be a JSON object")
    if raw.get("schema_version") not in READABLE_VERSIONS:
        raise SubmissionError(f"results.json: schema_version {raw.get('schema_version')!r}; this server reads "
                              f"version(s) {', '.join(map(str, READABLE_VERSIONS))}")
    try:
        run = parse_run(raw)
    except ValidationError as exc:
        raise _schema_error(RESULTS, exc) from None
    for key, table in (("results", run.results), ("counts", run.counts), ("versions", run.versions)):
        absent = [t for t in run.configs if t not in table]
        if absent:
            raise SubmissionError(f"results.json: {key} has no entry for task(s) {', '.join(absent)}")
    return raw, run


def _sample_files(files: dict[str, bytes], run: RunResults) -> dict[str, str]:
    """The name of each task's samples file (by task): one for each of the run's tasks, none for others."""
    sample_files = {m.group(1): name for name in files if (m := _SAMPLES.fullmatch(name))}
    if not run.configs:
        raise SubmissionError("results.json: the run has no tasks (configs is empty)")
    missing = [t for t in run.configs if t not in sample_files]
    extra = [t for t in sample_files if t not in run.configs]
    if missing:
        raise SubmissionError(f"samples file(s) missing for task(s) {', '.join(missing)}", 400)
    if extra:
        raise SubmissionError(f"samples file(s) for task(s) the run does not have: {', '.join(extra)}", 400)
    return {task: sample_files[task] for task in run.configs}


def _parse_samples(task: str, name: str, data: bytes) -> tuple[list[dict[str, Any]], list[SampleRecord]]:
    """A samples file's rows (hashed) and records: all of ``task``, each doc_id once, at least one."""
    rows = _json_lines(name, data)
    try:
        records = [SampleRecord.model_validate(r) for r in rows]
    except ValidationError as exc:
        raise _schema_error(name, exc) from None
    wrong = [r.doc_id for r in records if r.task != task]
    if wrong:
        raise SubmissionError(f"{name}: record(s) of another task (doc_id {wrong[0]})")
    ids = [r.doc_id for r in records]
    if len(set(ids)) != len(ids):
        raise SubmissionError(f"{name}: duplicate doc_id values")
    if not records:
        raise SubmissionError(f"{name}: no sample records")
    return rows, records


def parse_bundle(files: dict[str, bytes], limits: Limits | None = None) -> Bundle:
    """Validate the files of a submission (names, sizes, schema, one samples file per task)."""
    limits = limits or Limits()
    _check_files(files, limits)
    raw, run = _parse_results(files[RESULTS])
    raw_samples: dict[str, list[dict[str, Any]]] = {}
    samples: dict[str, list[SampleRecord]] = {}
    for task, name in _sample_files(files, run).items():
        raw_samples[task], samples[task] = _parse_samples(task, name, files[name])
    plots = {n: d for n, d in files.items() if _PLOT.fullmatch(n)}
    for name, data in plots.items():
        _check_png(name, data, limits)
    return Bundle(run=run, samples=samples, plots=plots, files=dict(files),
                  content_hash=content_hash(raw, raw_samples))
