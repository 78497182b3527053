"""Glue for the MIST judge task: 4 prompting techniques x 5 input arms per item; math in harness.metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from harness.protocols.mist import metrics as mist
from harness.protocols.mist.report import labels_from_items, mist_report
from harness.protocols.mist.rows import HumanLabel, MistJudgeDoc, MistRow

TECHNIQUES = ("zero_shot", "few_shot", "cot", "few_shot_cot")
ARMS = mist.ARMS

SCALE = (
    'Decide how the phrase "{compound}" is used in the sentence below, on this scale:\n'
    "Fully Figurative (FF): only the idiomatic sense is meant.\n"
    "Weak Figurative (WF): mostly idiomatic, with a trace of the literal picture.\n"
    "Figurative and Literal (FAL): both senses are active at once.\n"
    "Fully Literal (FL): the words mean exactly what they say.\n"
)
SHOTS = (
    "Examples:\n"
    'Sentence: "She finally spilled the beans about the surprise party." Phrase: "spilled the beans". '
    "Label: Fully Figurative\n"
    'Sentence: "He spilled the beans all over the kitchen floor." Phrase: "spilled the beans". '
    "Label: Fully Literal\n"
    'Sentence: "The firefighter was in hot water after the hose burst." Phrase: "in hot water". '
    "Label: Figurative and Literal\n"
)
IGNORE = "An image is attached. It may not match the sentence: ignore the image and judge the sentence alone.\n"
DIRECT = "Answer with the label only."
COT = (
    "Think step by step about what the phrase means in this sentence, then give your final answer on the "
    'last line as "Answer: <label>".'
)


def process_docs(dataset: Any) -> Any:
    """One doc per (item, technique, arm): 20 per item, item-major, the shown image (or none) as ``image``."""

    def expand(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {k: [] for k in MistJudgeDoc.columns()}
        item = {k: MistRow.read(batch, k) for k in ("id", "compound", "sense", "sentence", "human_majority")}
        labels = MistRow.read(batch, "human_labels")
        for row in range(len(item["id"])):
            for technique in TECHNIQUES:
                for arm in ARMS:
                    condition = arm.split("-")[0]
                    doc = MistJudgeDoc(
                        id=f"{item['id'][row]}-{technique}-{arm}",
                        item_id=item["id"][row],
                        compound=item["compound"][row],
                        sense=item["sense"][row],
                        sentence=item["sentence"][row],
                        human_majority=item["human_majority"][row],
                        human_labels=[HumanLabel(**h) for h in labels[row]],
                        technique=technique,
                        arm=arm,
                        image=None if condition == "none" else MistRow.read(batch, f"{condition}_image")[row],
                    )
                    for key, value in doc.to_dict().items():
                        out[key].append(value)
        return out

    return dataset.map(
        expand, batched=True, batch_size=8, remove_columns=dataset.column_names, features=MistJudgeDoc.features()
    )


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    technique, arm = MistJudgeDoc.read(doc, "technique"), MistJudgeDoc.read(doc, "arm")
    parts = [SCALE.format(compound=MistJudgeDoc.read(doc, "compound"))]
    if technique in ("few_shot", "few_shot_cot"):
        parts.append(SHOTS)
    if arm.endswith("-ignore"):
        parts.append(IGNORE)
    parts.append(f'Sentence: "{MistJudgeDoc.read(doc, "sentence")}"\n')
    parts.append(COT if technique in ("cot", "few_shot_cot") else DIRECT)
    return "".join(parts)


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    image = MistJudgeDoc.read(doc, "image", None)
    return [] if image is None else [image.convert("RGB")]


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    content = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict[str, Any]) -> str:
    majority = MistJudgeDoc.read(doc, "human_majority")
    return mist.LABELS[majority] if majority is not None and majority >= 0 else ""


_METRICS = (
    "change_rate_aligned",
    "change_rate_misleading",
    "control_rate_aligned",
    "control_rate_misleading",
    "direction",
    "same_side_fraction",
    "image_following_misleading",
    "agreement_none",
    "agreement_aligned",
    "agreement_misleading",
)


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """The parsed label with its cell; None (unparsed, counted) when the output names no label."""
    label = mist.parse_label(results[0])
    majority = MistJudgeDoc.read(doc, "human_majority")
    item = (
        None
        if label is None
        else {
            "item": MistJudgeDoc.read(doc, "item_id"),
            "technique": MistJudgeDoc.read(doc, "technique"),
            "arm": MistJudgeDoc.read(doc, "arm"),
            "label": label,
            "sense": MistJudgeDoc.read(doc, "sense"),
            "majority": majority if majority is not None and majority >= 0 else None,
        }
    )
    return {name: item for name in _METRICS}


def change_rate_aligned(items: list[Any]) -> float | None:
    return mist.change_rate(labels_from_items(items)[0], "aligned")


def change_rate_misleading(items: list[Any]) -> float | None:
    return mist.change_rate(labels_from_items(items)[0], "misleading")


def control_rate_aligned(items: list[Any]) -> float | None:
    return mist.control_rate(labels_from_items(items)[0], "aligned")


def control_rate_misleading(items: list[Any]) -> float | None:
    return mist.control_rate(labels_from_items(items)[0], "misleading")


def direction(items: list[Any]) -> float | None:
    labels, senses, _ = labels_from_items(items)
    return mist.direction(labels, senses)


def same_side_fraction(items: list[Any]) -> float | None:
    labels, senses, _ = labels_from_items(items)
    return mist.same_side_fraction(labels, senses)


def image_following_misleading(items: list[Any]) -> float | None:
    labels, senses, _ = labels_from_items(items)
    return mist.image_following_ratio(labels, senses, "misleading")


def _agreement(items: list[Any], condition: mist.ImageCondition | Literal["none"]) -> float | None:
    labels, _, majority = labels_from_items(items)
    return mist.agreement(labels, majority, condition)


def agreement_none(items: list[Any]) -> float | None:
    return _agreement(items, "none")


def agreement_aligned(items: list[Any]) -> float | None:
    return _agreement(items, "aligned")


def agreement_misleading(items: list[Any]) -> float | None:
    return _agreement(items, "misleading")


def report(records: list[Any], out_dir: Path | None, metadata: dict[str, Any]) -> dict[str, Any]:
    return mist_report(records, out_dir, metadata)
