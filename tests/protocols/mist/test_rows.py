"""MIST's column lists, ``MistRow`` (the built set) and ``MistJudgeDoc`` (the judge task's doc): the
features the builder and the task's ``process_docs`` have always written, and the task glue's clear
error on a doc without a column."""

from __future__ import annotations

from harness.protocols.mist.rows import MistJudgeDoc, MistRow
from tests.protocols.row_checks import assert_missing_column, task_utils

_LABELS = (
    "List({'annotator': Value('string'), 'panel': Value('string'), 'condition': Value('string'), "
    "'label': Value('int32')})"
)
#: ``repr`` of the Features ``builders/mist/builder.py`` wrote before it wrote ``MistRow``s.
ROW_FEATURES = (
    "{'id': Value('string'), 'compound': Value('string'), 'sense': Value('string'), 'sentence': "
    "Value('string'), 'subset': Value('string'), 'aligned_image': Image(mode=None, decode=True), "
    f"'misleading_image': Image(mode=None, decode=True), 'human_labels': {_LABELS}, "
    "'human_majority': Value('int32')}"
)
#: ``repr`` of the Features ``tasks/mist/utils.py``'s ``process_docs`` wrote before ``MistJudgeDoc``.
DOC_FEATURES = (
    "{'id': Value('string'), 'item_id': Value('string'), 'compound': Value('string'), 'sense': "
    "Value('string'), 'sentence': Value('string'), 'human_majority': Value('int32'), "
    f"'human_labels': {_LABELS}, 'technique': Value('string'), 'arm': Value('string'), "
    "'image': Image(mode=None, decode=True)}"
)


def test_features_are_the_builders_and_the_tasks() -> None:
    assert repr(MistRow.features()) == ROW_FEATURES
    assert repr(MistJudgeDoc.features()) == DOC_FEATURES


def test_process_docs_expands_an_item_into_its_judge_docs() -> None:
    from datasets import Dataset
    from PIL import Image

    from harness.protocols.mist.rows import HumanLabel

    aligned, misleading = Image.new("RGB", (8, 8), "red"), Image.new("RGB", (8, 8), "blue")
    row = MistRow(
        "mist-000",
        "hot water",
        "figurative",
        "S.",
        "dev",
        aligned,
        misleading,
        [HumanLabel("a", "blind", "none", 2)],
        2,
    )
    utils = task_utils("mist")
    docs = utils.process_docs(Dataset.from_list([row.to_dict()], features=MistRow.features()))
    assert len(docs) == len(utils.TECHNIQUES) * len(utils.ARMS) and docs.features == MistJudgeDoc.features()
    by_arm = {d["arm"]: d for d in docs if d["technique"] == "zero_shot"}
    assert by_arm["none"]["image"] is None and by_arm["misleading-ignore"]["image"].getpixel((0, 0)) == (0, 0, 255)
    assert docs[0]["human_labels"] == [{"annotator": "a", "panel": "blind", "condition": "none", "label": 2}]
    assert docs[0]["id"] == "mist-000-zero_shot-none" and docs[0]["item_id"] == "mist-000"


def test_task_glue_names_a_missing_column() -> None:
    utils = task_utils("mist")
    doc = {
        "id": "mist-000-cot-none",
        "item_id": "mist-000",
        "compound": "hot water",
        "sense": "figurative",
        "sentence": "He is in hot water.",
        "human_majority": 0,
        "human_labels": [],
        "technique": "cot",
        "arm": "none",
        "image": None,
    }
    assert_missing_column(utils.doc_to_text, doc, "sentence")
    assert_missing_column(utils.doc_to_text, doc, "technique")
    assert_missing_column(lambda d: utils.process_results(d, ["Fully Literal"]), doc, "item_id")
    assert_missing_column(utils.doc_to_target, doc, "human_majority")


def test_report_names_a_missing_column() -> None:
    from harness.protocols.mist.report import panels_from_records
    from harness.results.schema import SampleRecord

    label = {"annotator": "a", "panel": "blind", "condition": "none", "label": 2}
    doc = {"item_id": "mist-000", "human_labels": [label]}
    record = SampleRecord(task="mist", doc_id=0, doc_hash="h", doc=doc)
    assert panels_from_records([record])["blind"].labels == {"a": {"mist-000": 2}}
    assert_missing_column(lambda d: panels_from_records([record.model_copy(update={"doc": d})]), doc, "item_id")
