"""A FusionAudit item: the column list its builder writes and its tasks, attacks and audit read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.protocols.base import Unit
from harness.protocols.rows import Float32, ImageCell, Int8, Int32, Row


@dataclass(frozen=True)
class FusionRow(Row):
    """One item: the clean question with its gold answers, its deterministic wrong answer, and the
    Typo-Evid (rendered) and Nat-Evid (edited, OCR-checked) images that carry the wrong answer."""

    DATASET: ClassVar[str] = "fusion"

    id: str
    source: str
    source_id: str
    category: str
    question: str
    answers: list[str]
    answer_kind: str
    wrong_answer: str
    wrong_rule: str
    image: ImageCell
    typo_image: ImageCell
    typo_region: list[Int32]
    typo_style: str
    #: None when the set was built without an editor (``natevid_status`` ``not_built``).
    natevid_image: ImageCell | None
    natevid_instruction: str
    natevid_status: str
    #: -1.0 where the OCR check did not run.
    natevid_ocr_recall: Float32
    #: 1 or 0 where the OCR check ran, else -1.
    natevid_wrong_readable: Int8


#: What this protocol's intervals resample and its tasks' metrics cluster by (``Protocol.unit``).
UNIT = Unit(
    "clean-correct item", "id", "one item the model answers correctly when clean, with every attack's outcome on it"
)
