"""DiaVLo's one column list, ``DiavloRow``: the features its builder has always written, and its task
glue's and report's clear error on a doc without a column."""

from __future__ import annotations

from harness.protocols.diavlo.report import performance
from harness.protocols.diavlo.rows import DiavloRow
from tests.protocols.row_checks import assert_missing_column, task_utils

_TRIPLET = (
    "{'subject': Value('string'), 'relation': Value('string'), 'object': Value('string'), 'subject_box': "
    "List(Value('float32')), 'object_box': List(Value('float32')), 'origin': Value('string'), 'status': "
    "Value('string'), 'curated_by': Value('string')}"
)
_CHANGE = (
    "{'candidate': Value('int32'), 'annotator': Value('string'), 'at': Value('string'), 'field': "
    "Value('string'), 'before': Value('string'), 'after': Value('string')}"
)
#: ``repr`` of the Features ``builders/diavlo/builder.py`` wrote before it wrote ``DiavloRow``s.
FEATURES = (
    "{'id': Value('string'), 'source': Value('string'), 'question_id': Value('string'), 'question': "
    "Value('string'), 'options': List(Value('string')), 'answer': Value('string'), 'answers': "
    "List(Value('string')), 'answer_type': Value('string'), 'category': Value('string'), 'image': "
    f"Image(mode=None, decode=True), 'image_key': Value('string'), 'sk_triplets': List({_TRIPLET}), "
    f"'curation_status': Value('string'), 'curation_changes': List({_CHANGE})}}"
)


def test_features_are_the_builders_features() -> None:
    assert repr(DiavloRow.features()) == FEATURES


def test_task_glue_and_report_name_a_missing_column() -> None:
    utils = task_utils("diavlo")
    doc = {
        "id": "vqav2-1",
        "source": "vqav2",
        "question": "What color is the box?",
        "options": [],
        "answer": "red",
        "answers": ["red"],
        "answer_type": "vqa",
        "sk_triplets": [],
    }
    assert_missing_column(utils.doc_to_text, doc, "question")
    assert_missing_column(utils.doc_to_text, doc, "answer_type")
    assert_missing_column(utils.doc_to_visual, doc, "image")
    assert_missing_column(lambda d: performance(d, "red"), doc, "answer")
    assert performance(doc, "red") == 1.0
