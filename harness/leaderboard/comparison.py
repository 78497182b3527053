"""Comparing a task's claims with the server's re-scoring: figures, report, counts, per-sample metrics,
docs against the server's dataset, and how much of the task the samples cover; the task's check follows
from what was found (:meth:`Findings.check`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.engine.baseline import BASELINE_KEYS
from harness.engine.request_check import RequestCheck
from harness.engine.task_prompts import strip_images
from harness.hashing import stable_hash, to_jsonable
from harness.leaderboard.checks import MISMATCH, MODIFIED, PARTIAL, RESCORED, VERIFIED, Heading, Mismatch, TaskCheck
from harness.results.metric_key import MetricKey
from harness.results.schema import SampleRecord, TaskCounts

MAX_ERROR_SHARE = 0.05  # more errored samples than this share make a task partial
_REPORT_ARTEFACTS = ("plot", "plots", "plot_not_drawn")  # the report's files, or why one is missing: not figures


def same(a: Any, b: Any, tolerance: float) -> bool:
    """Whether two JSON values are equal, numbers within ``tolerance`` (NaN equals NaN, a bool only a bool)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tolerance) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def compare(claimed: dict[str, Any], recomputed: dict[str, Any], tolerance: float) -> list[Mismatch]:
    """The figures of one task's (or group's) ``results`` entry that differ, each by its ``MetricKey``; the
    alias and the baseline comparison's fields are left out (a submission carries no baseline)."""
    keys = sorted((set(claimed) | set(recomputed)) - {"alias", *BASELINE_KEYS})
    return [
        Mismatch(MetricKey.parse(k) or k, claimed.get(k), recomputed.get(k))
        for k in keys
        if not same(claimed.get(k), recomputed.get(k), tolerance)
    ]


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    """A report as {dotted path: leaf value}, without the names of its plot files."""
    if isinstance(value, dict):
        return {
            k: v
            for key, item in value.items()
            if key not in _REPORT_ARTEFACTS
            for k, v in _leaves(item, f"{path}.{key}" if path else str(key)).items()
        }
    return {path: value}


def compare_reports(
    claimed: dict[str, Any] | None, recomputed: dict[str, Any] | None, tolerance: float
) -> list[Mismatch]:
    """The figures of a task report that differ between the claim and the server's recomputation (the
    first five, by path)."""
    if claimed is None or recomputed is None:
        if claimed == recomputed:
            return []
        return [Mismatch("report", "present" if claimed else None, "present" if recomputed else None)]
    ours, theirs = _leaves(recomputed), _leaves(claimed)
    differing = [k for k in sorted(set(ours) | set(theirs)) if not same(theirs.get(k), ours.get(k), tolerance)]
    return [Mismatch(f"report {k}", theirs.get(k), ours.get(k)) for k in differing[:5]]


def samples_differing(claimed: Sequence[SampleRecord], rescored: Sequence[SampleRecord], tolerance: float) -> int:
    """Samples whose claimed per-sample metrics (or unparsed flag) differ from the re-scored ones."""
    return sum(
        not same(a.metrics, b.metrics, tolerance) or a.unparsed != b.unparsed
        for a, b in zip(claimed, rescored, strict=True)
    )


def dataset_docs(docs: Any, records: list[SampleRecord]) -> tuple[int, int]:
    """(samples whose doc is not the dataset's doc of that id, the task's doc count) against the server's
    processed ``docs``."""
    differing = 0
    for record in records:
        if record.doc_hash == "" and record.error is not None:
            continue  # a row the run could not decode carries no doc
        if not 0 <= record.doc_id < len(docs):
            differing += 1
            continue
        doc = docs[record.doc_id]
        if stable_hash(doc) != record.doc_hash or to_jsonable(strip_images(doc)) != record.doc:
            differing += 1
    return differing, len(docs)


@dataclass(frozen=True)
class Coverage:
    """How much of its task a submission's samples cover, as far as the server can tell."""

    expected: int | None  # the task's docs: the dataset's count, else the claimed effective n-samples
    covered: int  # distinct doc ids of the samples in range(expected)
    samples: int
    errors: int
    limit: int | None  # the run's claimed --limit when it cut the task (known only without the dataset)

    def problems(self, max_error_share: float) -> list[str]:
        """Why the samples do not stand for the whole task (empty when they do)."""
        out = []
        if self.expected is not None and self.covered < self.expected:
            out.append(f"covers {self.covered} of the task's {self.expected} docs")
        if self.limit is not None:
            out.append(f"the run was cut to {self.limit} docs (--limit)")
        if self.samples and self.errors / self.samples > max_error_share:
            out.append(
                f"{self.errors} of {self.samples} samples are errors (over the {max_error_share:.0%} "
                "this server accepts)"
            )
        return out


def coverage(
    records: list[SampleRecord], counts: TaskCounts, claimed_size: Any, claimed_limit: Any, dataset_size: int | None
) -> Coverage:
    """The samples' coverage of their task: against the server's copy of the dataset when it has one, else
    against the run's own claim (``n-samples`` effective, and ``--limit``)."""
    expected = dataset_size
    limit = None
    if expected is None:
        effective = claimed_size.get("effective") if isinstance(claimed_size, dict) else None
        expected = effective if isinstance(effective, int) and not isinstance(effective, bool) else None
        if isinstance(claimed_limit, int) and expected is not None and expected >= claimed_limit:
            limit = claimed_limit
    ids = {r.doc_id for r in records}
    covered = len(ids) if expected is None else sum(0 <= i < expected for i in ids)
    return Coverage(expected, covered, counts.samples, counts.errors, limit)


@dataclass(frozen=True)
class Findings:
    """What comparing one re-scored task with its claims found."""

    requests: RequestCheck
    mismatches: tuple[Mismatch, ...]  # claimed figures, report figures and counts that differ
    samples_differing: int
    bad_docs: int | None  # samples whose doc is not the dataset's; None: no dataset to check them against
    coverage: Coverage

    def problems(self) -> list[str]:
        """Why the task's figures cannot stand (empty when they can)."""
        problems = []
        if self.requests.modified:
            problems.append(
                f"{self.requests.differing} sample request(s) differ from this server's task "
                f"(first: {self.requests.first})"
            )
        if self.mismatches:
            problems.append(f"{len(self.mismatches)} claimed figure(s) differ from the re-scored samples")
        if self.samples_differing:
            problems.append(f"{self.samples_differing} sample(s) carry per-sample metrics that differ")
        if self.bad_docs:
            problems.append(f"{self.bad_docs} sample doc(s) differ from the dataset")
        return problems

    def check(self, heading: Heading, max_error_share: float) -> TaskCheck:
        """The task's check: modified, else mismatch, else partial, else verified (rescored without the
        dataset), with every reason in its message."""
        problems, partial = self.problems(), self.coverage.problems(max_error_share)
        docs_checked = self.bad_docs is not None
        status = (
            MODIFIED
            if self.requests.modified
            else MISMATCH
            if problems
            else PARTIAL
            if partial
            else VERIFIED
            if docs_checked
            else RESCORED
        )
        unchecked = [] if docs_checked else ["docs not checked: this server holds no copy of the dataset"]
        return heading.check(
            status,
            "; ".join(problems + partial + unchecked),
            mismatches=self.mismatches,
            samples_differing=self.samples_differing,
            docs_checked=docs_checked,
            docs_expected=self.coverage.expected,
            docs_covered=self.coverage.covered,
            errors=self.coverage.errors,
        )
