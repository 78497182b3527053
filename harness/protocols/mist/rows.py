"""MIST's column lists: an item of the built set (``MistRow``), and the judge task's doc, one per
(item, technique, arm) (``MistJudgeDoc``), which its task's ``process_docs`` expands each item into."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.protocols.base import Unit
from harness.protocols.rows import ImageCell, Int32, Row


@dataclass(frozen=True)
class HumanLabel:
    """One annotator's label of one item: the panel (``informed`` or ``blind``), the condition the item
    was seen in (``none``, ``aligned``, ``misleading``) and the label's index on the scale."""

    annotator: str
    panel: str
    condition: str
    label: Int32


@dataclass(frozen=True)
class MistRow(Row):
    """An item: the sentence using the compound in one sense, with its sense-aligned and misleading
    images and the human panels' labels (``human_majority`` -1 where no majority)."""

    DATASET: ClassVar[str] = "mist"

    id: str
    compound: str
    sense: str
    sentence: str
    subset: str
    aligned_image: ImageCell
    misleading_image: ImageCell
    human_labels: list[HumanLabel]
    human_majority: Int32


@dataclass(frozen=True)
class MistJudgeDoc(Row):
    """What the judge task asks about: an item under one prompting technique and input arm, with the
    image the arm shows (None for the no-image arm)."""

    DATASET: ClassVar[str] = "mist"

    id: str
    item_id: str
    compound: str
    sense: str
    sentence: str
    human_majority: Int32
    human_labels: list[HumanLabel]
    technique: str
    arm: str
    image: ImageCell | None


#: What this protocol's intervals resample and its tasks' metrics cluster by (``Protocol.unit``).
UNIT = Unit("item", "item_id", "one sentence with its idiomatic phrase, under every prompting technique and input arm")
