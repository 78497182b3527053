"""A DiaVLo pair: the column list its builder writes and its tasks, report and audit read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.protocols.base import Unit
from harness.protocols.rows import Float32, ImageCell, Int32, Row


@dataclass(frozen=True)
class SkTriplet:
    """One scene-knowledge triplet with its concepts' boxes (``[x0, y0, x1, y1]``, empty when unknown),
    where it came from and its curation status."""

    subject: str
    relation: str
    object: str
    subject_box: list[Float32]
    object_box: list[Float32]
    origin: str
    status: str
    curated_by: str


@dataclass(frozen=True)
class CurationChange:
    """One logged curation edit of a pair (``candidate`` -1 for an added triplet); values JSON-encoded."""

    candidate: Int32
    annotator: str
    at: str
    field: str
    before: str
    after: str


@dataclass(frozen=True)
class DiavloRow(Row):
    """A (question, image) pair of one source benchmark with its SK triplets and curation record."""

    DATASET: ClassVar[str] = "diavlo"

    id: str
    source: str
    question_id: str
    question: str
    options: list[str]
    answer: str
    answers: list[str]
    answer_type: str
    category: str
    image: ImageCell
    image_key: str
    sk_triplets: list[SkTriplet]
    curation_status: str
    curation_changes: list[CurationChange]


#: What this protocol's intervals resample and its tasks' metrics cluster by (``Protocol.unit``).
UNIT = Unit("question", "question_id", "one question of a source benchmark, with its image and SHOULD-KNOW triplets")
