"""A VISTA (topic, image, prompt) record: the column list its builder writes and its task, audit and
leaderboard figures read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.protocols.base import Unit
from harness.protocols.rows import ImageCell, Row


@dataclass(frozen=True)
class VistaRow(Row):
    """One neutral prompt about one image of one topic; ``image_seed`` -1 (and no ``image_prompt``) for a
    folder photograph, ``image_attempt`` the slot's attempt after rejections."""

    DATASET: ClassVar[str] = "vista"

    id: str
    category: str
    topic: str
    image_id: str
    image_prompt: str
    image_seed: int
    image_source: str
    image_attempt: int
    prompt_id: int
    prompt_type: str
    prompt: str
    image: ImageCell


#: What this protocol's intervals resample and its tasks' metrics cluster by (``Protocol.unit``).
UNIT = Unit("query", "id", "one image x prompt pair (a doc), with every model's k answers to it")
