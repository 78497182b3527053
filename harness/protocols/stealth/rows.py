"""A Stealth Prompt Testset sample under one condition: the column list its builder writes and its tasks
read (one schema for all four subsets; a column a subset does not use is None)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.protocols.base import Unit
from harness.protocols.rows import Float32, ImageCell, Int32, Row


@dataclass(frozen=True)
class WordBox:
    """One rendered word, its role (``positive``, ``answer``, ``decoy``, ...) and its box ``[x0, y0, x1, y1]``."""

    text: str
    role: str
    box: list[Int32]


@dataclass(frozen=True)
class StealthRow(Row):
    """A rendered sample: its text (and question, answers, decoy or word per subset), the condition's
    colors, the words' boxes, the measured fill color with its CIEDE2000 distance from black, and the
    PNG image."""

    DATASET: ClassVar[str] = "stealth"

    # The published set's column order: the sample's own fields, then the condition's, then the rendering's.
    sample_id: str
    subset: str
    text: str
    question: str | None
    answers: list[str]
    decoy: str | None
    polarity: str | None
    first_half_polarity: str | None
    second_half_polarity: str | None
    word: str | None
    font_sha256: str
    decoy_embedder: str | None
    condition: str
    colored_polarity: str | None
    hue: str | None
    intensity: Int32 | None
    rgb: list[Int32]
    gray_level: Int32 | None
    salient: str | None
    id: str
    font_size: Int32
    word_boxes: list[WordBox]
    delta_e: Float32
    measured_rgb: list[Int32]
    image: ImageCell


#: What this protocol's intervals resample and its tasks' metrics cluster by (``Protocol.unit``).
UNIT = Unit("sentence", "sample_id", "one sentence, question or word, with its renderings under every condition")
