"""FusionAudit's one column list, ``FusionRow``: the features its builder has always written, and its
task glue's clear error on a doc without a column."""

from __future__ import annotations

from harness.protocols.fusion.rows import FusionRow
from tests.protocols.row_checks import assert_missing_column, task_utils

#: ``repr`` of the Features ``builders/fusion/build.py`` wrote before it wrote ``FusionRow``s.
FEATURES = (
    "{'id': Value('string'), 'source': Value('string'), 'source_id': Value('string'), 'category': "
    "Value('string'), 'question': Value('string'), 'answers': List(Value('string')), 'answer_kind': "
    "Value('string'), 'wrong_answer': Value('string'), 'wrong_rule': Value('string'), 'image': "
    "Image(mode=None, decode=True), 'typo_image': Image(mode=None, decode=True), 'typo_region': "
    "List(Value('int32')), 'typo_style': Value('string'), 'natevid_image': Image(mode=None, decode=True), "
    "'natevid_instruction': Value('string'), 'natevid_status': Value('string'), 'natevid_ocr_recall': "
    "Value('float32'), 'natevid_wrong_readable': Value('int8')}"
)


def test_features_are_the_builders_features() -> None:
    assert repr(FusionRow.features()) == FEATURES


def test_task_glue_names_a_missing_column() -> None:
    utils = task_utils("fusion")
    doc = {"id": "chartqa-0000", "source": "chartqa", "answers": ["45"], "wrong_answer": "56", "question": "Q?"}
    assert_missing_column(lambda d: utils.process_results(d, ["It is 56"]), doc, "wrong_answer")
    assert_missing_column(lambda d: utils.process_results(d, ["45"]), doc, "answers")
    assert_missing_column(utils.doc_to_text, doc, "question")
    assert_missing_column(utils.visual_typo, doc, "typo_image")
