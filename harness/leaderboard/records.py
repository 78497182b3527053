"""Storing a verified submission as an immutable record, and reading records back.

A record is keyed by the content hash of its results and samples: sending the same run again returns
the existing record (also when two copies race each other), and nothing in the service updates or
deletes a record afterwards.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import selectinload

from harness.leaderboard.bundle import RESULTS, Bundle, BundleFile
from harness.leaderboard.charts import metrics_with_ci
from harness.leaderboard.checks import Verification, checks_json, worst
from harness.leaderboard.db import Database, Reservation, Score, StoredFile, Submission
from harness.leaderboard.public import public_results, redact, shown_name
from harness.results.metric_key import figures, label_of
from harness.results.schema import ModelInfo, RunResults

CHART = "leaderboard_metrics.png"
MAX_ID = 2**63 - 1  # the widest integer key of SQLite and PostgreSQL
Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass(frozen=True)
class ModelTraits:
    """What the filters use: family, parameter count, open weights or API, and identity."""

    model_id: str | None
    revision: str | None
    backend: str | None
    family: str | None
    parameters: int | None
    access: str
    smoke_test_model: bool


def _size_from_name(name: str) -> int | None:
    """Parameters written in a model name (``Qwen2-VL-7B`` -> 7e9, ``SmolVLM-256M`` -> 2.56e8)."""
    match = re.search(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*([BbMm])(?![A-Za-z])", name)
    if not match:
        return None
    return int(float(match.group(1)) * (1e9 if match.group(2) in "Bb" else 1e6))


def model_traits(model: str, info: ModelInfo) -> ModelTraits:
    """Traits from the run's model spec and what its backend said of the model (``provenance.model``)."""
    backend = info.backend or model.partition(":")[0] or None
    name = model.partition(":")[2] or model
    family = info.model_type
    if not family:
        match = re.match(r"[A-Za-z]+", name.rsplit("/", 1)[-1])
        family = match.group(0).lower() if match else None
    return ModelTraits(
        model_id=info.model or name,
        revision=info.commit or info.revision,
        backend=backend,
        family=family,
        parameters=info.parameters if info.parameters is not None else _size_from_name(name),
        access="api" if backend == "openai" else "open",
        smoke_test_model=info.smoke_test_model,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class _Scored:
    """A task or group whose figures become score rows, with what each row states besides its figure."""

    name: str
    values: dict[str, Any]
    protocol: str
    version: str
    status: str
    n: int
    higher: dict[str, bool]

    def rows(self, claimed: dict[str, Any]) -> list[Score]:
        """One row per figure (each by its ``MetricKey``, written as ``"metric,filter"`` in the row)."""
        return [
            Score(
                task=self.name,
                protocol=self.protocol,
                version=self.version,
                metric=key.encoded,
                value=_number(value),
                stderr=_number(self.values.get(key.stderr.encoded)),
                claimed=_number(claimed.get(key.encoded)),
                higher_is_better=self.higher.get(key.metric),
                n=self.n,
                status=self.status,
            )
            for key, value in figures(self.values)
        ]


def _scored_units(verification: Verification, group_members: dict[str, list[str]]) -> list[_Scored]:
    """Each task, then each group with a checked member (its status the worst of its members' and its own)."""
    checks, counts, higher = verification.checks, verification.counts, verification.higher_is_better
    units = [
        _Scored(t, values, checks[t].protocol, checks[t].version, checks[t].status, counts[t].scored, higher.get(t, {}))
        for t, values in verification.results.items()
    ]
    for group, values in verification.groups.items():
        members = [m for m in group_members.get(group, []) if m in checks]
        if members:
            states = {checks[m].status for m in [*members, group] if m in checks}
            n = sum(counts[m].scored for m in members)
            units.append(
                _Scored(
                    group, values, checks[members[0]].protocol, "group", worst(states), n, higher.get(members[0], {})
                )
            )
    return units


def _score_rows(verification: Verification, run: RunResults) -> list[Score]:
    """One row per metric of each task, then of each group, beside the figure the run claims for it."""
    claimed = {**run.results, **run.groups}
    return [
        row for unit in _scored_units(verification, run.group_subtasks) for row in unit.rows(claimed.get(unit.name, {}))
    ]


def _chart(model: str, scores: list[Score]) -> bytes | None:
    rows = []
    for s in scores:
        if s.value is None:
            continue
        low = s.value - Z95 * s.stderr if s.stderr is not None else None
        high = s.value + Z95 * s.stderr if s.stderr is not None else None
        rows.append((f"{s.task} {label_of(s.metric)}", s.value, low, high))
    return metrics_with_ci(rows, f"{redact(model)}: re-scored metrics") if rows else None


def _made(name: str, kind: str, data: bytes) -> StoredFile:
    """A file the server made (a report plot, the chart), stored with its digest."""
    return StoredFile(name=name, kind=kind, sha256=hashlib.sha256(data).hexdigest(), size=len(data), content=data)


def _received(file: BundleFile) -> StoredFile:
    """A submitted file, stored as it was received (its digest taken when it was read)."""
    return StoredFile(name=file.name, kind=file.kind, sha256=file.sha256, size=len(file.data), content=file.data)


def _stored_files(bundle: Bundle, verification: Verification, scores: list[Score]) -> list[StoredFile]:
    """results.json and the samples as received, the server's report plots, the run's own plots (those the
    server's do not replace) and the chart of the re-scored figures."""
    files = [_received(f) for f in bundle.files.values() if f.kind != "plot"]
    files += [_made(name, "report", data) for name, data in verification.plots.items()]
    files += [
        _received(f)
        for f in bundle.files.values()
        if f.kind == "plot" and f.name not in verification.plots and f.name != CHART
    ]
    chart = _chart(bundle.model, scores)
    return files if chart is None else [*files, _made(CHART, "chart", chart)]


def find_submission(db: Database, content_hash: str) -> Submission | None:
    """The stored submission with this content hash, or None (a resubmission is a duplicate)."""
    with db.session() as session:
        return session.scalar(select(Submission).where(Submission.content_hash == content_hash))


def _record(bundle: Bundle, verification: Verification, submitter: str) -> Submission:
    """The record of a verified submission: its model's traits, the claim, the server's figures and checks,
    its score rows and its files."""
    run = bundle.run
    traits = model_traits(bundle.model, run.provenance.model)
    scores = _score_rows(verification, run)
    return Submission(
        content_hash=bundle.content_hash,
        model=bundle.model[:500],
        model_id=traits.model_id and str(traits.model_id)[:500],
        revision=traits.revision and str(traits.revision)[:200],
        backend=traits.backend,
        family=traits.family,
        parameters=traits.parameters,
        access=traits.access,
        smoke_test_model=traits.smoke_test_model,
        harness_version=str(run.provenance.harness_version)[:50],
        git_revision=str(run.provenance.git_revision)[:100],
        submitter=submitter,
        status=verification.status,
        claimed=run.model_dump(mode="json", by_alias=True),
        recomputed={
            "results": verification.results,
            "groups": verification.groups,
            "reports": verification.reports,
            "headlines": verification.headlines,
            "counts": {t: c.model_dump() for t, c in verification.counts.items()},
        },
        checks=checks_json(verification.checks),
        scores=scores,
        files=_stored_files(bundle, verification, scores),
    )


def store_submission(
    db: Database, bundle: Bundle, verification: Verification, submitter: str, reservation: int | None = None
) -> tuple[int, bool]:
    """Insert the record (scores, files, the server's plots), releasing the upload's quota ``reservation``
    in the same transaction; returns (id, whether it existed already)."""
    record = _record(bundle, verification, submitter)
    with db.session() as session:
        session.add(record)
        try:
            session.flush()  # a copy stored meanwhile fails here, on its content hash
            if reservation is not None:
                session.execute(delete(Reservation).where(Reservation.id == reservation))
            session.commit()
        except IntegrityError:
            session.rollback()
            existing = session.scalar(select(Submission.id).where(Submission.content_hash == bundle.content_hash))
            if existing is None:
                raise
            return existing, True
        return record.id, False


def list_submissions(db: Database) -> list[Submission]:
    """Every record with its scores, oldest first."""
    with db.session() as session:
        return list(
            session.scalars(select(Submission).options(selectinload(Submission.scores)).order_by(Submission.id))
        )


def _storable_id(submission_id: int) -> bool:
    """Whether an id from a URL can be a record's key (a wider one overflows the database driver)."""
    return 0 <= submission_id <= MAX_ID


def get_submission(db: Database, submission_id: int) -> Submission | None:
    """The submission with its scores, or None (also for an id no record can have)."""
    if not _storable_id(submission_id):
        return None
    with db.session() as session:
        return session.scalar(
            select(Submission).where(Submission.id == submission_id).options(selectinload(Submission.scores))
        )


def file_index(db: Database, submission_id: int) -> list[tuple[str, str, int]]:
    """(name, kind, size) of a record's files, without their contents."""
    if not _storable_id(submission_id):
        return []
    with db.session() as session:
        rows = session.execute(
            select(StoredFile.name, StoredFile.kind, StoredFile.size)
            .where(StoredFile.submission_id == submission_id)
            .order_by(StoredFile.id)
        )
        return [(r.name, r.kind, r.size) for r in rows]


def get_file(db: Database, submission_id: int, name: str) -> bytes | None:
    """A stored file as published: ``results.json`` with local paths redacted, any other byte for byte."""
    if not _storable_id(submission_id):
        return None
    with db.session() as session:
        content = session.scalar(
            select(StoredFile.content).where(StoredFile.submission_id == submission_id, StoredFile.name == name)
        )
    return public_results(content) if content is not None and name == RESULTS else content


def submission_summary(record: Submission) -> dict[str, Any]:
    """The public JSON of a record (the API's answer and the export's submissions.json), local paths
    redacted."""
    summary: dict[str, Any] = {
        "id": record.id,
        "model": shown_name(record.model),
        "model_id": shown_name(record.model_id),
        "revision": shown_name(record.revision),
        "backend": shown_name(record.backend),
        "family": shown_name(record.family),
        "parameters": record.parameters,
        "access": record.access,
        "smoke_test_model": record.smoke_test_model,
        "submitter": shown_name(record.submitter),
        "submitted_at": record.submitted_at.isoformat(),
        "status": record.status,
        "content_hash": record.content_hash,
        "harness_version": record.harness_version,
        "git_revision": record.git_revision,
        "checks": record.checks,
        "scores": [
            {
                "task": s.task,
                "protocol": s.protocol,
                "metric": s.metric,
                "value": s.value,
                "stderr": s.stderr,
                "claimed": s.claimed,
                "n": s.n,
                "status": s.status,
            }
            for s in record.scores
        ],
    }
    public: dict[str, Any] = redact(summary)
    return public
