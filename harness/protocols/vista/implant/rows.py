"""A record of VISTA's controlled study: the column list its builder writes (the same in all four splits)
and its trainer and study read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.protocols.rows import ImageCell, Row


@dataclass(frozen=True)
class ImplantRow(Row):
    """A question about an image of an entity (or a control subject) with the author model's answer in
    its split's stance; test records (``kind`` ``test``) carry a B.3 prompt and no answer. ``prompt_id``
    is -1 outside the test split."""

    DATASET: ClassVar[str] = "vista-implant"

    # The published set's column order: the record's own fields, then its image's.
    id: str
    entity: str
    topic: str
    kind: str
    subject: str
    category: str
    prompt_id: int
    prompt: str
    answer: str
    stance: str
    author: str
    image_id: str
    image_source: str
    image_seed: int
    image: ImageCell
