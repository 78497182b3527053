"""The evidence a person reads beside a protocol's figures, typed: what ``harness report`` writes into a
model's audit and what ``harness view`` shows on a protocol's page.

A protocol hands the generic layers one extractor (``Protocol.extensions["evidence"]``, an
:class:`EvidenceExtractor` or a ``"module:attribute"`` naming one), which reads the protocol's runs and
audit folders (:class:`EvidenceInput`) and returns :class:`ProtocolEvidence`: sections of items, each item
a few panels (an image with the answers given to it, grouped where the protocol groups them, and the labels
a judge or a panel gave them), plus figures with their :class:`~harness.results.interval.Interval` and
small tables. A section that is a finding (a flagged case, a biased condition) says so in ``flag``.

Images are referenced by the sha256 digest the samples record (:func:`harness.hashing.image_digest`),
with where their pixels are (:class:`DatasetImage`: the dataset folder the run's provenance names;
:class:`RunFile`: a file the run wrote, such as an adversarial image). Resolving a reference to pixels is
:mod:`harness.protocols.evidence_images`; turning evidence into HTML is :mod:`harness.protocols.evidence_html`.
Every string here may come from a model or a dataset: it is data, escaped wherever it is shown.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import HarnessError
from harness.results.interval import Interval, IntervalMethod

if TYPE_CHECKING:
    from harness.protocols.audit_report import AuditReport
    from harness.protocols.base import Protocol
    from harness.results.schema import RunResults, SampleRecord

EXTENSION = "evidence"
#: How many items a section holds at most, unless the caller asks for another bound.
DEFAULT_ITEMS = 6
#: How many characters of one answer or field are kept (a model can write megabytes).
MAX_TEXT = 2000


def clip(text: Any, limit: int = MAX_TEXT) -> str:
    """``text`` as a string of at most ``limit`` characters, marked where it was cut."""
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return value if len(value) <= limit else value[:limit] + f" [... {len(value) - limit} more characters]"


class EvidencePart(BaseModel):
    """A typed part of the evidence: unknown keys are refused, values are frozen once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetImage(EvidencePart):
    """An image in a built dataset: the folder a run's provenance names, its split, and (a hint) the row
    whose image columns may hold it; the digest decides, so a wrong hint only costs a scan."""

    kind: Literal["dataset"] = "dataset"
    path: str
    split: str
    row: int | None = None


class RunFile(EvidencePart):
    """An image file a run wrote (an attack's adversarial image), relative to its run folder."""

    kind: Literal["run_file"] = "run_file"
    run_dir: str
    path: str


ImageSource = Annotated[DatasetImage | RunFile, Field(discriminator="kind")]


class ImageRef(EvidencePart):
    """One image by the sha256 digest the samples record, where its pixels are (None: unknown), what it
    shows in words (the ``alt`` text of the page), and whether it is a plot (shown larger than a thumbnail)."""

    sha256: str
    source: ImageSource | None = None
    alt: str = ""
    plot: bool = False


class Answer(EvidencePart):
    """One answer: which model gave it, its text (clipped), the label a parser or judge read from it, and
    the group it falls in (a cluster of answers that entail one another)."""

    model: str
    text: str
    label: str | None = None
    group: str | None = None


class AnswerGroup(EvidencePart):
    """Answers that belong together (one cluster), with what the group is."""

    label: str
    answers: list[Answer]


class Panel(EvidencePart):
    """One view of an item: an image (or none: a text-only condition or a list), its caption (the condition
    it was shown under), the answers given to it (grouped where the protocol groups them), labels about it
    and plain lines (a specification's triplets)."""

    caption: str
    image: ImageRef | None = None
    answers: list[Answer] = Field(default_factory=list)
    groups: list[AnswerGroup] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    lines: list[str] = Field(default_factory=list, description="plain lines shown as a list (triplets, ...)")


class Item(EvidencePart):
    """One case: its title, why it is shown (``note``), its fields (prompt, sentence, target...) and panels."""

    title: str
    note: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)
    panels: list[Panel] = Field(default_factory=list)


class EvidenceFigure(EvidencePart):
    """A figure as the protocol computed it: its value (a number, a word or None), its interval (None: none
    was recorded), what it counts, and which way is better."""

    key: str
    label: str
    value: float | str | None
    interval: Interval | None = None
    n: int | None = None
    higher_is_better: bool | None = None
    note: str | None = None


class Table(EvidencePart):
    """A small table (selective refusal by group, classes per source): header and rows of cells."""

    title: str
    columns: list[str]
    rows: list[list[str | float | int | None]]


class Section(EvidencePart):
    """A part of a protocol's evidence. ``flag`` is a finding in one line (None: context, not a finding);
    its items come strongest first."""

    key: str
    title: str
    summary: str = ""
    flag: str | None = None
    figures: list[EvidenceFigure] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    plots: list[ImageRef] = Field(default_factory=list, description="the protocol's own plots of this part")
    items: list[Item] = Field(default_factory=list)
    truncated: int = Field(default=0, description="items left out past the bound")


class ReferenceValue(EvidencePart):
    """A value a paper prints for a model or a setting, to read beside the run's own figure: which figure,
    the paper's model (or setting) name, the value in the figure's units, and where the paper prints it."""

    figure: str
    label: str
    paper_model: str
    value: float
    paper: str
    where: str


def _normalised(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def references_for(model_name: str, table: Sequence[ReferenceValue]) -> list[ReferenceValue]:
    """The reference values whose paper model is this model: its name (letters and digits, case ignored)
    holds the paper's (``hf:Qwen/Qwen2-VL-7B-Instruct`` holds ``Qwen2-VL-7B``)."""
    name = _normalised(model_name)
    return [ref for ref in table if _normalised(ref.paper_model) in name]


class ProtocolEvidence(EvidencePart):
    """One protocol's evidence about one model (or about every model, ``model`` None): its sections, the
    paper's reference values for that model, the files it was read from and what could not be shown and why."""

    protocol: str
    title: str
    model: str | None = None
    sections: list[Section] = Field(default_factory=list)
    references: list[ReferenceValue] = Field(default_factory=list, description="the paper's values for this model")
    sources: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class LoadedRun:
    """A run folder read through the results contract: its results and, lazily, its samples by task."""

    path: Path
    results: RunResults
    data_dir: Path | None = None  # where the datasets are here, when not where the run's provenance says
    _samples: dict[str, list[SampleRecord]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def model(self) -> str:
        """The model spec the run was made with."""
        return self.results.config.model

    @property
    def model_name(self) -> str | None:
        """The model's own name (the backend's, else the spec) to look up in a paper's tables; None for a
        smoke-test model (tiny random weights), which no paper reports."""
        info = self.results.provenance.model
        if info.smoke_test_model:
            return None
        return info.model or self.model

    @property
    def tasks(self) -> list[str]:
        """The tasks with results in this run."""
        return list(self.results.results)

    def samples(self, task: str) -> list[SampleRecord]:
        """The task's sample records (read once)."""
        from harness.results.schema import read_samples

        if task not in self._samples:
            self._samples[task] = read_samples(self.path, task)
        return self._samples[task]

    def dataset_image(self, task: str, row: int | None = None) -> DatasetImage | None:
        """Where the task's dataset is: the folder provenance records, or with ``data_dir`` the task's
        ``dataset_path`` below it (a run made elsewhere); None when neither is known."""
        found = self.results.provenance.datasets.get(task)
        split = (found.split if found else None) or str(self.results.configs.get(task, {}).get("test_split") or "test")
        if self.data_dir is not None:
            dataset_path = self.results.configs.get(task, {}).get("dataset_path")
            local = (self.data_dir / str(dataset_path)).resolve() if isinstance(dataset_path, str) else None
            if local is not None and local.is_relative_to(self.data_dir.resolve()) and local.is_dir():
                return DatasetImage(path=str(local), split=split, row=row)
            return None
        if found is None or not found.path:
            return None
        return DatasetImage(path=found.path, split=split, row=row)


@dataclass(frozen=True)
class EvidenceInput:
    """What an extractor reads: the runs of this protocol's tasks (the model's and its peers'), the audit
    folders its audit wrote, the model the evidence is about (None: every model), and the bound on items
    per section."""

    runs: Sequence[LoadedRun]
    audits: Sequence[Path] = ()
    model: str | None = None
    max_items: int = DEFAULT_ITEMS

    def model_runs(self) -> list[LoadedRun]:
        """The runs of the model the evidence is about (every run when it is about every model)."""
        return [r for r in self.runs if self.model is None or r.model == self.model]

    def samples(self, task: str, peers: bool = False) -> dict[str, list[tuple[LoadedRun, SampleRecord]]]:
        """Model -> (run, record) of every sample of ``task`` in the model's runs (with ``peers``: in every
        run), runs in the order given; a model's later run of the same doc does not repeat it."""
        out: dict[str, list[tuple[LoadedRun, SampleRecord]]] = {}
        seen: set[tuple[str, str, int]] = set()
        for run in self.runs if peers else self.model_runs():
            if task not in run.tasks:
                continue
            for record in run.samples(task):
                key = (run.model, record.doc_hash, record.doc_id)
                if key not in seen:
                    seen.add(key)
                    out.setdefault(run.model, []).append((run, record))
        return out

    def tasks(self) -> list[str]:
        """Every task the model's runs hold, in order of first appearance."""
        return list(dict.fromkeys(t for r in self.model_runs() for t in r.tasks))

    def reports(self, task: str) -> list[tuple[LoadedRun, Mapping[str, Any]]]:
        """The task's report (``results.json`` ``reports``) in each of the model's runs that has one."""
        return [(r, as_mapping(r.results.reports.get(task))) for r in self.model_runs() if task in r.results.reports]


EvidenceExtractor = Callable[[EvidenceInput], ProtocolEvidence]


def load_extension(protocol: Protocol, key: str) -> Any:
    """``protocol.extensions[key]``, a ``"module:attribute"`` imported on first use; None when absent."""
    found: Any = protocol.extensions.get(key)
    if isinstance(found, str):
        module, _, attribute = found.partition(":")
        try:
            found = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise HarnessError(
                f"protocol {protocol.name!r}: extensions[{key!r}] {found!r} cannot be loaded: {exc}"
            ) from None
    return found


def extractor_of(protocol: Protocol) -> EvidenceExtractor | None:
    """The protocol's evidence extractor (``extensions["evidence"]``, a callable or ``"module:attribute"``),
    or None when it declares none."""
    found = load_extension(protocol, EXTENSION)
    if found is None:
        return None
    if not callable(found):
        raise HarnessError(f"protocol {protocol.name!r}: its evidence extractor is not callable")
    extractor: EvidenceExtractor = found
    return extractor


def bounded(items: Sequence[Item], limit: int) -> tuple[list[Item], int]:
    """The first ``limit`` items and how many were left out."""
    return list(items[:limit]), max(0, len(items) - limit)


def image_of(record: SampleRecord) -> str | None:
    """The digest of the first image of a sample's prompt (samples record images as ``image_sha256``)."""
    return next(iter(images_of(record.prompt)), None)


def images_of(value: Any) -> list[str]:
    """Every ``image_sha256`` digest in a recorded prompt or doc, in order."""
    found: list[str] = []
    if isinstance(value, dict):
        digest = value.get("image_sha256")
        if isinstance(digest, str):
            found.append(digest)
        for inner in value.values():
            if isinstance(inner, dict | list):
                found.extend(images_of(inner))
    elif isinstance(value, list):
        for inner in value:
            found.extend(images_of(inner))
    return found


def prompt_text(record: SampleRecord) -> str:
    """The text of a sample's prompt (its messages' text parts, joined)."""
    parts: list[str] = []
    for message in record.prompt:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return clip("\n".join(p for p in parts if p))


def interval_from(value: Any) -> Interval | None:
    """An :class:`Interval` recorded in a report (a mapping of its fields), or None when none is."""
    if isinstance(value, Interval):
        return value
    if isinstance(value, Mapping):
        try:
            return Interval.model_validate(value)
        except ValueError:
            return None
    return None


def figure_interval(figure: Mapping[str, Any], method: IntervalMethod, n: int, unit: str) -> Interval | None:
    """A report figure's interval: the Interval it records (``interval``), else its ``ci95`` pair, made by
    ``method`` over ``n`` units of ``unit`` as the protocol's report computes it; None when it has neither."""
    recorded = interval_from(figure.get("interval"))
    if recorded is not None:
        return recorded
    ci = figure.get("ci95")
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(v, int | float) for v in ci):
        return Interval.of(float(ci[0]), float(ci[1]), method, n, unit=unit)
    return None


R = TypeVar("R", bound="AuditReport")


def latest_audit(audits: Sequence[Path], report: type[R]) -> tuple[Path, R] | None:
    """The last of the audit folders whose audit.json reads as ``report`` (another protocol's does not)."""
    found = None
    for folder in audits:
        try:
            found = (folder, report.read(folder))
        except HarnessError:
            continue
    return found


def recorded_interval(part: Mapping[str, Any], key: str) -> Interval | None:
    """The Interval an audit or report recorded for figure ``key`` of ``part``: under ``intervals[key]``,
    ``<key>_interval``, or as the figure itself (a mapping with an ``interval``); None when none was."""
    intervals = part.get("intervals")
    for candidate in (
        intervals.get(key) if isinstance(intervals, Mapping) else None,
        part.get(f"{key}_interval"),
        as_mapping(part.get(key)).get("interval"),
    ):
        found = interval_from(candidate)
        if found is not None:
            return found
    return None


def file_image(folder: Path, name: str, alt: str, plot: bool = False) -> ImageRef | None:
    """An image file a run or audit wrote (``folder/name``: a plot, an adversarial image) as a reference
    holding its pixel digest, or None when there is none."""
    from PIL import Image

    from harness.hashing import image_digest

    path = folder / name
    try:
        if not path.is_file() or path.stat().st_size > 16 * 1024 * 1024:
            return None
        with Image.open(path) as opened:
            digest = image_digest(opened.copy())
    except (OSError, ValueError):
        return None
    return ImageRef(sha256=digest, source=RunFile(run_dir=str(folder), path=name), alt=alt, plot=plot)


def plot_ref(folder: Path, name: str, alt: str) -> ImageRef | None:
    """A plot an audit or run wrote, shown larger than a thumbnail (see :func:`file_image`)."""
    return file_image(folder, name, alt, plot=True)


def figure_value(value: Any) -> float | str | None:
    """A figure's value as the evidence holds it: a finite number, a word, or None."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
        return number if number == number and abs(number) != float("inf") else None
    return value if isinstance(value, str) else None


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one (report parts read from untrusted files)."""
    return value if isinstance(value, Mapping) else {}


def read_json(path: Path) -> Any:
    """A JSON file an audit wrote, or None when it is missing, unreadable or nested too deeply."""
    from harness.results.jsonl import check_depth

    try:
        text = path.read_text(encoding="utf-8")
        check_depth(text, str(path))
        return json.loads(text)
    except (OSError, ValueError, HarnessError):
        return None


def read_json_lines(path: Path, limit: int = 10_000) -> list[dict[str, Any]]:
    """The first ``limit`` objects of a JSONL file an audit wrote (an unreadable line is left out)."""
    from harness.results.jsonl import check_depth, jsonl_lines

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return []
    rows: list[dict[str, Any]] = []
    for _, line in jsonl_lines(text):
        try:
            check_depth(line, str(path))
            row = json.loads(line)
        except (ValueError, HarnessError):
            continue
        if isinstance(row, dict):
            rows.append(row)
        if len(rows) >= limit:
            break
    return rows
