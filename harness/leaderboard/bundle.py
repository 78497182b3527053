"""What a submission carries (results.json, the samples files, the run's plots) and its validation.

The same checks serve the server (uploaded bytes) and the client (a run folder read before upload),
so a submitter sees a refusal before sending anything the server would refuse. Each file is read once
here; the :class:`Bundle` keeps its bytes and digest, and every later step (re-scoring, the record) reads
the bundle, never the files again.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from harness.display import display_problem
from harness.errors import HarnessError
from harness.results.jsonl import check_depth, loads_line, read_budget, within_read_budget
from harness.results.schema import READABLE_VERSIONS, RunResults, SampleRecord, parse_run
from harness.secrets import SECRET_MARKER, find_secret

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
    """Size limits of one submission (bytes and counts); the server's ``--max-upload-mb`` sets the total.

    A samples line over ``max_line_bytes`` or a submission of more than ``max_samples`` sample records
    is refused while it is read, before the rest is parsed."""

    max_total_bytes: int = 64 * 2**20
    max_plot_bytes: int = 5 * 2**20
    max_files: int = 200
    max_plot_pixels: int = 25_000_000
    max_line_bytes: int = 4 * 2**20
    max_samples: int = 200_000
    #: Seconds reading one submission may take (``harness submit`` and ``leaderboard import``'s
    #: ``--read-timeout``); the server bounds its workers' whole work instead (``--rescore-timeout``).
    read_timeout_s: float | None = None


Source = bytes | Path  # a submitted file: its bytes (a client, a test) or where it was received (the server)


FileKind = Literal["results", "samples", "plot"]


@dataclass(frozen=True)
class BundleFile:
    """One submitted file as received: its kind, its bytes and their sha256 (taken once, as it is read)."""

    name: str
    kind: FileKind
    data: bytes = field(repr=False)
    sha256: str

    @classmethod
    def read(cls, name: str, kind: FileKind, data: bytes) -> BundleFile:
        """The file ``name`` of ``kind`` holding ``data``, its digest taken."""
        return cls(name, kind, data, hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Bundle:
    """A validated submission: the run, its samples, and its files as received (by name)."""

    run: RunResults
    samples: dict[str, list[SampleRecord]]
    files: dict[str, BundleFile] = field(repr=False)
    content_hash: str
    model: str  # the submitted model's name: the run's --model, else the provenance's, else "unknown"

    @property
    def plots(self) -> dict[str, bytes]:
        """The run's own plots, by name."""
        return {name: f.data for name, f in self.files.items() if f.kind == "plot"}


def is_bundle_file(name: str) -> bool:
    """Whether a file name is one a submission carries: results.json, samples_<task>.jsonl or a plot."""
    return name == RESULTS or bool(_SAMPLES.fullmatch(name) or _PLOT.fullmatch(name))


def read_bytes(source: Source) -> bytes:
    """A submitted file's bytes."""
    return source if isinstance(source, bytes) else source.read_bytes()


def _size(source: Source) -> int:
    return len(source) if isinstance(source, bytes) else source.stat().st_size


def bundle_paths(run_dir: Path) -> dict[str, Path]:
    """The files of a run folder a submission carries (results.json, samples_*.jsonl, *.png), by name.
    A symbolic link, or a file that resolves outside the folder, is refused: a received folder must not
    make the server or the uploader read (and publish) a file from elsewhere."""
    run_dir = Path(run_dir)
    results = run_dir / RESULTS
    if results.is_symlink() or not results.is_file():
        raise HarnessError(
            f"{run_dir}: no results.json (is this a run folder written by harness eval?)"
            if not results.is_symlink()
            else f"{results}: a symbolic link; refused"
        )
    root = run_dir.resolve()
    found = {}
    for path in sorted(run_dir.iterdir()):
        if not is_bundle_file(path.name):
            continue
        if path.is_symlink():
            raise HarnessError(f"{path}: a symbolic link; a run folder's files must be regular files in it")
        if path.resolve().parent != root or not path.is_file():
            raise HarnessError(f"{path}: not a regular file inside {run_dir}; refused")
        found[path.name] = path
    return found


def read_run_files(run_dir: Path) -> dict[str, bytes]:
    """The files of a run folder a submission carries, read (symbolic links refused, see ``bundle_paths``)."""
    return {name: path.read_bytes() for name, path in bundle_paths(run_dir).items()}


def content_hash(run: dict[str, Any], samples: dict[str, list[dict[str, Any]]]) -> str:
    """sha256 of the canonical JSON of results and samples: the identity of a submission."""
    blob = json.dumps({"results": run, "samples": samples}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _check_png(name: str, data: bytes, limits: Limits) -> None:
    from PIL import Image, UnidentifiedImageError

    if len(data) > limits.max_plot_bytes:
        raise SubmissionError(f"{name}: {len(data)} bytes, over the {limits.max_plot_bytes}-byte limit for a plot", 413)
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


def _raw_lines(name: str, data: bytes, max_line: int) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of a JSONL file split on newline bytes only; a line over ``max_line`` bytes is
    refused as soon as it is seen, before the rest is parsed."""
    start, lineno = 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        lineno += 1
        if end - start > max_line:
            raise SubmissionError(f"{name} line {lineno}: over this server's {max_line}-byte limit for one line", 413)
        yield lineno, data[start:end]
        start = end + 1


def _json_rows(name: str, data: bytes, max_line: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of each non-blank line: UTF-8, nested at most ``MAX_JSON_DEPTH`` deep, JSON,
    an object."""
    for lineno, raw in within_read_budget(_raw_lines(name, data, max_line), name):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SubmissionError(f"{name} line {lineno}: not UTF-8 text") from None
        if not line.strip():
            continue
        try:
            row = loads_line(line, f"{name} line {lineno}")
        except HarnessError as exc:
            raise SubmissionError(str(exc).replace("; fix or remove that line", "")) from None
        except RecursionError:  # unreachable past the depth check; kept as the last guard
            raise SubmissionError(f"{name} line {lineno}: JSON nested too deeply") from None
        if not isinstance(row, dict):
            raise SubmissionError(f"{name} line {lineno}: a sample record must be a JSON object")
        yield lineno, row


def _schema_error(name: str, exc: ValidationError) -> SubmissionError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(top level)"
    return SubmissionError(f"{name}: {where}: {first['msg']} ({exc.error_count()} schema error(s))")


def _check_files(files: Mapping[str, Source], limits: Limits) -> None:
    """Refuses a submission of too many files, too many bytes, unexpected names or no results.json."""
    if len(files) > limits.max_files:
        raise SubmissionError(f"{len(files)} files; a submission carries at most {limits.max_files}", 413)
    total = sum(_size(v) for v in files.values())
    if total > limits.max_total_bytes:
        raise SubmissionError(f"the submission is {total} bytes, over the {limits.max_total_bytes}-byte limit", 413)
    unknown = sorted(n for n in files if not is_bundle_file(n))
    if unknown:
        raise SubmissionError(
            f"unexpected file(s) {', '.join(map(repr, unknown[:5]))}: a submission carries "
            "results.json, samples_<task>.jsonl and *.png plots",
            400,
        )
    if RESULTS not in files:
        raise SubmissionError("results.json is missing", 400)


def _parse_results(data: bytes) -> tuple[dict[str, Any], RunResults]:
    """results.json as its raw JSON (hashed) and as the run it describes, with an entry for every task."""
    try:
        text = data.decode("utf-8")
        check_depth(text, RESULTS)
        raw = json.loads(text)
    except HarnessError as exc:  # nested too deeply
        raise SubmissionError(str(exc)) from None
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, an integer of too many digits, too deep
        raise SubmissionError(f"results.json: not JSON ({type(exc).__name__})") from None
    if not isinstance(raw, dict):
        raise SubmissionError("results.json: must be a JSON object")
    if raw.get("schema_version") not in READABLE_VERSIONS:
        raise SubmissionError(
            f"results.json: schema_version {raw.get('schema_version')!r}; this server reads "
            f"version(s) {', '.join(map(str, READABLE_VERSIONS))}"
        )
    found = find_secret(raw)
    if found is not None:
        raise SubmissionError(
            f"results.json: {found} holds a credential, which a run must never publish; `harness score RUN_DIR` "
            f"rewrites the run with it as {SECRET_MARKER!r} (then remove RUN_DIR/original)"
        )
    try:
        run = parse_run(raw)
    except ValidationError as exc:
        raise _schema_error(RESULTS, exc) from None
    for where, shown in (("config.model", run.config.model), ("provenance.model.model", run.provenance.model.model)):
        problem = display_problem(f"results.json: {where}", shown or "")
        if problem is not None:
            raise SubmissionError(problem)
    for key, table in (("results", run.results), ("counts", run.counts), ("versions", run.versions)):
        absent = [t for t in run.configs if t not in table]
        if absent:
            raise SubmissionError(f"results.json: {key} has no entry for task(s) {', '.join(absent)}")
    return raw, run


def _sample_files(files: Mapping[str, Source], run: RunResults) -> dict[str, str]:
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


class _Counter:
    """Sample records read so far across a submission's files, against ``Limits.max_samples``."""

    def __init__(self, limit: int) -> None:
        self.limit, self.seen = limit, 0

    def add(self, name: str, lineno: int) -> None:
        self.seen += 1
        if self.seen > self.limit:
            raise SubmissionError(
                f"{name} line {lineno}: over this server's limit of {self.limit} sample records per submission", 413
            )


def _parse_samples(
    task: str, name: str, data: bytes, limits: Limits, counter: _Counter, digest: Any
) -> list[SampleRecord]:
    """A samples file's records, parsed line by line (each row's canonical JSON fed to ``digest``, then
    dropped): all of ``task``, each doc_id once, at least one."""
    records: list[SampleRecord] = []
    ids: set[int] = set()
    for lineno, row in _json_rows(name, data, limits.max_line_bytes):
        counter.add(name, lineno)
        try:
            record = SampleRecord.model_validate(row)
        except ValidationError as exc:
            raise _schema_error(f"{name} line {lineno}", exc) from None
        if record.task != task:
            raise SubmissionError(f"{name}: record(s) of another task (doc_id {record.doc_id})")
        if record.doc_id in ids:
            raise SubmissionError(f"{name}: duplicate doc_id values")
        ids.add(record.doc_id)
        digest.update((b"," if records else b"") + _canonical(row))
        records.append(record)
    if not records:
        raise SubmissionError(f"{name}: no sample records")
    return records


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def parse_bundle(files: Mapping[str, Source], limits: Limits | None = None) -> Bundle:
    """Validate the files of a submission (names, sizes, schema, one samples file per task), each read once
    (its bytes and digest kept in the bundle) and its samples parsed line by line; the content hash is the one
    :func:`content_hash` gives, computed as the rows are parsed."""
    limits = limits or Limits()
    with read_budget(limits.read_timeout_s):
        return _parse_bundle(files, limits)


def _parse_bundle(files: Mapping[str, Source], limits: Limits) -> Bundle:
    _check_files(files, limits)
    results = BundleFile.read(RESULTS, "results", read_bytes(files[RESULTS]))
    raw, run = _parse_results(results.data)
    digest = hashlib.sha256(b'{"results":' + _canonical(raw) + b',"samples":{')
    received = {RESULTS: results}
    samples: dict[str, list[SampleRecord]] = {}
    counter = _Counter(limits.max_samples)
    for i, (task, name) in enumerate(sorted(_sample_files(files, run).items())):
        received[name] = BundleFile.read(name, "samples", read_bytes(files[name]))
        digest.update((b"," if i else b"") + _canonical(task) + b":[")
        samples[task] = _parse_samples(task, name, received[name].data, limits, counter, digest)
        digest.update(b"]")
    digest.update(b"}}")
    for name in sorted(n for n in files if _PLOT.fullmatch(n)):
        received[name] = BundleFile.read(name, "plot", read_bytes(files[name]))
        _check_png(name, received[name].data, limits)
    return Bundle(
        run=run,
        samples={t: samples[t] for t in run.configs},
        files=dict(sorted(received.items())),
        content_hash=digest.hexdigest(),
        model=str(run.config.model or run.provenance.model.model or "unknown"),
    )
