"""MIST (Misleading-Image Stress Test) figures for a VLM judge.

Labels are the 4-point scale as integers: 0 Fully Figurative, 1 Weak Figurative, 2 Figurative and
Literal, 3 Fully Literal. The figurative side of the divide is {0, 1}, the literal side {2, 3}
(choice: "Figurative and Literal" sits with the literal readings because it admits the literal sense).

A judge's labels are keyed by cell: (item, technique, arm) with arm one of ``none`` (no image),
``aligned-ignore``, ``aligned-silent``, ``misleading-ignore``, ``misleading-silent`` (image shown,
with or without the explicit "ignore the image" instruction). ``None`` is an unparsed label: every
figure below skips the comparisons it takes part in. An item's ``sense`` is the reading its sentence
uses (``figurative`` or ``literal``); its aligned image depicts that sense and its misleading image
the other one.

- change rate(c, a) = share of (item, technique) cells whose label under image condition c with
  instruction arm a differs from the no-image label; ``a = "both"`` pools the two arms.
- prompt-edit control rate(c) = share of (item, technique) cells whose ignore-arm and silent-arm
  labels differ under the same image c (only the instruction was edited).
- direction: the paper counts one comparison per (item, prompt, judge) cell, prompt meaning the
  prompting technique (13 judges x 200 items x 4 techniques = 10,400 cells; 1,776 disagree). One run
  is one judge, so its cells are (item, technique) under one instruction arm ``arm``: ``ignore`` by
  default, the prompt that carries the "ignore the image" instruction the human guidelines give (the
  silent arm is the prompt-edit control); ``silent`` is the other choice. Among the cells whose aligned
  and misleading labels differ, direction is the share that moved toward the sense the misleading
  image depicts (up the scale when it depicts the literal sense, down when figurative).
- disagreement rate = disagreeing cells / cells with both labels parsed (the paper's 17.1%).
- same-side fraction = among the disagreeing cells, the share whose two labels lie on the same side.
- agreement(c) = share of labels under condition c (``none``, ``aligned``, ``misleading``) equal to the
  human majority label of the item (items without a strict majority are left out).
- image-following ratio(c) = among (item, technique) cells whose label under c with instruction arm
  ``arm`` (``ignore`` by default, as for direction) differs from the no-image label, the share that
  moved toward the sense the shown image depicts (for the aligned image: the item's own sense). 0.5 is
  what undirected noise gives.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from harness.errors import HarnessError

LABELS = ("Fully Figurative", "Weak Figurative", "Figurative and Literal", "Fully Literal")
ABBREVIATIONS = ("FF", "WF", "FAL", "FL")  # as the judge prompt introduces them; "F&L" is read as FAL
_LABEL_RE = re.compile(
    r"\b(fully\s+figurative|weak(?:ly)?\s+figurative|figurative\s+and\s+literal|fully\s+literal)\b"
    r"|(?<![\w&])(FF|WF|FAL|F&L|FL)(?![\w&])",
    re.IGNORECASE,
)
_NAME_INDEX = {
    "fully figurative": 0,
    "weak figurative": 1,
    "weakly figurative": 1,
    "figurative and literal": 2,
    "fully literal": 3,
    "ff": 0,
    "wf": 1,
    "fal": 2,
    "f&l": 2,
    "fl": 3,
}


def parse_label(response: str) -> int | None:
    """The judge's final label (the last label named, so reasoning before the answer is skipped):
    a full name or an abbreviation; None when there is none (counted as unparsed, never guessed)."""
    found = [" ".join(m.group(0).lower().split()) for m in _LABEL_RE.finditer(response or "")]
    return _NAME_INDEX[found[-1]] if found else None


ARMS = ("none", "aligned-ignore", "aligned-silent", "misleading-ignore", "misleading-silent")
#: The image shown with a sentence: the one depicting its own sense, or the other sense.
ImageCondition = Literal["aligned", "misleading"]
#: The prompt with the explicit "ignore the image" instruction, or without it (the prompt-edit control).
InstructionArm = Literal["ignore", "silent"]
Cell = tuple[str, str, str]  # (item, technique, arm)


def side(label: int) -> str:
    """The side of the figurative-literal divide a label lies on: ``figurative`` for 0 and 1, else ``literal``."""
    return "figurative" if label <= 1 else "literal"


def _toward(before: int, after: int, depicted: str) -> bool:
    """Whether moving from ``before`` to ``after`` goes toward the depicted sense on the scale."""
    return (after > before) if depicted == "literal" else (after < before)


def _other(sense: str) -> str:
    return "literal" if sense == "figurative" else "figurative"


def _pairs(labels: Mapping[Cell, int | None], arm_a: str, arm_b: str) -> list[tuple[str, str, int, int]]:
    """(item, technique, label under arm_a, label under arm_b) where both parsed."""
    out = []
    for (item, technique, arm), label in labels.items():
        if arm != arm_a or label is None:
            continue
        other = labels.get((item, technique, arm_b))
        if other is not None:
            out.append((item, technique, label, other))
    return out


def _share(flags: Sequence[bool]) -> float | None:
    return float(np.mean(flags)) if flags else None


def change_rate(
    labels: Mapping[Cell, int | None], condition: ImageCondition, arm: InstructionArm | Literal["both"] = "both"
) -> float | None:
    """Change rate(c, a): the share of (item, technique) cells whose label under image condition ``c`` and
    instruction arm ``a`` differs from the no-image label; ``both`` pools the two arms (module docstring)."""
    arms = ("ignore", "silent") if arm == "both" else (arm,)
    flags = [a != b for a_ in arms for _, _, a, b in _pairs(labels, f"{condition}-{a_}", "none")]
    return _share(flags)


def control_rate(labels: Mapping[Cell, int | None], condition: ImageCondition) -> float | None:
    """Prompt-edit control rate(c): the share of cells whose ignore-arm and silent-arm labels differ under
    the same image condition ``c`` (module docstring)."""
    return _share([a != b for _, _, a, b in _pairs(labels, f"{condition}-ignore", f"{condition}-silent")])


INSTRUCTION_ARMS: tuple[InstructionArm, ...] = get_args(InstructionArm)
PAPER_ARM: InstructionArm = "ignore"


def _check_arm(arm: str) -> None:
    if arm not in INSTRUCTION_ARMS:
        raise HarnessError(f"MIST: unknown instruction arm {arm!r}; use ignore or silent")


@dataclass(frozen=True)
class DirectionCounts:
    """Aligned vs misleading over one judge's (item, technique) cells under one instruction arm."""

    arm: InstructionArm
    cells: int  # both labels parsed
    disagreeing: int
    toward: int  # disagreeing cells that moved toward the misleading image's sense
    same_side: int  # disagreeing cells whose two labels lie on the same side

    @property
    def disagreement_rate(self) -> float | None:
        """Disagreeing cells over cells with both labels parsed (the paper's 17.1%); None without cells."""
        return self.disagreeing / self.cells if self.cells else None

    @property
    def direction(self) -> float | None:
        """The share of disagreeing cells that moved toward the misleading image's sense; None without any."""
        return self.toward / self.disagreeing if self.disagreeing else None

    @property
    def same_side_fraction(self) -> float | None:
        """The share of disagreeing cells whose two labels lie on the same side; None without any."""
        return self.same_side / self.disagreeing if self.disagreeing else None


def direction_counts(
    labels: Mapping[Cell, int | None], senses: Mapping[str, str], arm: InstructionArm = PAPER_ARM
) -> DirectionCounts:
    """One comparison per (item, technique) cell, as the paper counts per (item, prompt, judge)."""
    _check_arm(arm)
    pairs = _pairs(labels, f"aligned-{arm}", f"misleading-{arm}")
    moved = [(item, a, m) for item, _, a, m in pairs if a != m]
    return DirectionCounts(
        arm,
        len(pairs),
        len(moved),
        sum(_toward(a, m, _other(senses[item])) for item, a, m in moved),
        sum(side(a) == side(m) for _, a, m in moved),
    )


def direction(
    labels: Mapping[Cell, int | None], senses: Mapping[str, str], arm: InstructionArm = PAPER_ARM
) -> float | None:
    """Direction under instruction arm ``arm``: among the cells whose aligned and misleading labels differ,
    the share that moved toward the misleading image's sense (module docstring)."""
    return direction_counts(labels, senses, arm).direction


def same_side_fraction(
    labels: Mapping[Cell, int | None], senses: Mapping[str, str], arm: InstructionArm = PAPER_ARM
) -> float | None:
    """Same-side fraction under instruction arm ``arm``: among the cells whose aligned and misleading labels
    differ, the share whose two labels lie on the same side of the divide."""
    return direction_counts(labels, senses, arm).same_side_fraction


def image_following_ratio(
    labels: Mapping[Cell, int | None],
    senses: Mapping[str, str],
    condition: ImageCondition,
    arm: InstructionArm = PAPER_ARM,
) -> float | None:
    """Image-following ratio(c): among the cells whose label under condition ``c`` and arm ``arm`` differs
    from the no-image label, the share that moved toward the shown image's sense (0.5 is undirected noise)."""
    _check_arm(arm)
    flags = []
    for item, _, with_image, without in _pairs(labels, f"{condition}-{arm}", "none"):
        if with_image != without:
            depicted = senses[item] if condition == "aligned" else _other(senses[item])
            flags.append(_toward(without, with_image, depicted))
    return _share(flags)


def majority_label(panel_labels: Sequence[int]) -> int | None:
    """The strict majority (most frequent, unique) label of a panel; None on a tie or no labels."""
    counts = Counter(panel_labels).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def agreement(
    labels: Mapping[Cell, int | None], majority: Mapping[str, int | None], condition: ImageCondition | Literal["none"]
) -> float | None:
    """Exact match with the human majority under ``none``, ``aligned`` or ``misleading`` (both arms)."""
    arms = ("none",) if condition == "none" else (f"{condition}-ignore", f"{condition}-silent")
    flags = [
        label == majority[item]
        for (item, _, arm), label in labels.items()
        if arm in arms and label is not None and majority.get(item) is not None
    ]
    return _share(flags)


def panel_agreement(panel: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """Fleiss' kappa (statsmodels; items every annotator labelled) and Krippendorff's ordinal alpha
    (``krippendorff``; missing labels allowed) of one human panel: annotator -> {item -> label}."""
    import krippendorff
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    annotators = sorted(panel)
    items = sorted({i for labels in panel.values() for i in labels})
    matrix = np.array([[panel[a].get(i, np.nan) for i in items] for a in annotators], dtype=float)
    complete = ~np.isnan(matrix).any(axis=0)
    kappa = None
    if complete.sum() >= 2 and len(annotators) >= 2:
        table, _ = aggregate_raters(matrix[:, complete].T.astype(int), n_cat=len(LABELS))
        kappa = float(fleiss_kappa(table, method="fleiss"))
    alpha = None
    if len(annotators) >= 2 and np.unique(matrix[~np.isnan(matrix)]).size >= 2:
        alpha = float(
            krippendorff.alpha(
                reliability_data=matrix, level_of_measurement="ordinal", value_domain=list(range(len(LABELS)))
            )
        )
    return {
        "fleiss_kappa": kappa,
        "krippendorff_alpha": alpha,
        "annotators": len(annotators),
        "items": len(items),
        "items_complete": int(complete.sum()),
    }
