"""VISTA's column lists, ``VistaRow`` and the controlled study's ``ImplantRow``: the features their builders
have always written, and the task glue's and study's clear error on a doc without a column."""

from __future__ import annotations

import pytest

from harness.errors import DatasetError
from harness.protocols.vista.implant.rows import ImplantRow
from harness.protocols.vista.implant.study import _entity
from harness.protocols.vista.rows import VistaRow
from harness.results.schema import SampleRecord
from tests.protocols.row_checks import assert_missing_column, task_utils

#: ``repr`` of the Features ``builders/vista/builder.py`` wrote before it wrote ``VistaRow``s.
VISTA_FEATURES = (
    "{'id': Value('string'), 'category': Value('string'), 'topic': Value('string'), 'image_id': "
    "Value('string'), 'image_prompt': Value('string'), 'image_seed': Value('int64'), 'image_source': "
    "Value('string'), 'image_attempt': Value('int64'), 'prompt_id': Value('int64'), 'prompt_type': "
    "Value('string'), 'prompt': Value('string'), 'image': Image(mode=None, decode=True)}"
)
#: ``repr`` of the Features of the set ``builders/vista/implant.py`` wrote before it wrote ``ImplantRow``s
#: (its columns in the order of its row dicts' keys, which ``Dataset.from_list`` keeps).
IMPLANT_FEATURES = (
    "{'id': Value('string'), 'entity': Value('string'), 'topic': Value('string'), 'kind': Value('string'), "
    "'subject': Value('string'), 'category': Value('string'), 'prompt_id': Value('int64'), 'prompt': "
    "Value('string'), 'answer': Value('string'), 'stance': Value('string'), 'author': Value('string'), "
    "'image_id': Value('string'), 'image_source': Value('string'), 'image_seed': Value('int64'), 'image': "
    "Image(mode=None, decode=True)}"
)


def test_features_are_the_builders_features() -> None:
    assert repr(VistaRow.features()) == VISTA_FEATURES
    assert repr(ImplantRow.features()) == IMPLANT_FEATURES


def _record(doc: dict[str, object], responses: list[str]) -> SampleRecord:
    return SampleRecord(task="vista", doc_id=0, doc_hash="h", doc=doc, responses=responses)


def test_task_glue_names_a_missing_column() -> None:
    utils = task_utils("vista")
    doc = {"id": "white-00-p00", "prompt": "Describe the image.", "category": "demographic", "topic": "White"}
    assert_missing_column(utils.doc_to_text, doc, "prompt")
    assert_missing_column(utils.doc_to_visual, doc, "image")
    records = [_record(doc, ["I cannot help with that."])]
    assert utils.report(records, None, {})["selective_refusal_all"]["spread"] == 0.0
    with pytest.raises(DatasetError, match=r"^a vista doc has no column 'topic'"):
        utils.report([_record({"category": "demographic"}, ["x"])], None, {})


def test_study_reads_the_entity_column() -> None:
    assert _entity(_record({"entity": "Uber"}, ["x"])) == "Uber"
    assert _entity(_record({"id": "white-00-p00"}, ["x"])) is None
