"""The Stealth Prompt Testset's one column list, ``StealthRow``: the features its builder has always
written, and its task glue's clear error on a doc without a column."""

from __future__ import annotations

from harness.protocols.stealth.rows import StealthRow
from tests.protocols.row_checks import assert_missing_column, task_utils

#: ``repr`` of the Features of the set ``builders/stealth/builder.py`` wrote before it wrote ``StealthRow``s
#: (its columns in the order of its row dicts' keys, which ``Dataset.from_list`` keeps).
FEATURES = (
    "{'sample_id': Value('string'), 'subset': Value('string'), 'text': Value('string'), 'question': "
    "Value('string'), 'answers': List(Value('string')), 'decoy': Value('string'), 'polarity': "
    "Value('string'), 'first_half_polarity': Value('string'), 'second_half_polarity': Value('string'), "
    "'word': Value('string'), 'font_sha256': Value('string'), 'decoy_embedder': Value('string'), "
    "'condition': Value('string'), 'colored_polarity': Value('string'), 'hue': Value('string'), "
    "'intensity': Value('int32'), 'rgb': List(Value('int32')), 'gray_level': Value('int32'), 'salient': "
    "Value('string'), 'id': Value('string'), 'font_size': Value('int32'), 'word_boxes': List({'text': "
    "Value('string'), 'role': Value('string'), 'box': List(Value('int32'))}), 'delta_e': Value('float32'), "
    "'measured_rgb': List(Value('int32')), 'image': Image(mode=None, decode=True)}"
)


def test_features_are_the_builders_features() -> None:
    assert repr(StealthRow.features()) == FEATURES


def test_task_glue_names_a_missing_column() -> None:
    utils = task_utils("stealth")
    vqa = {
        "sample_id": "vqa-000",
        "condition": "decoy-128",
        "answers": ["Denver Broncos"],
        "salient": "decoy",
        "decoy": "Panthers",
        "gray_level": 128,
    }
    assert utils.process_vqa(vqa, ["Panthers"])["ier"]["hit"] == 1
    assert_missing_column(lambda d: utils.process_vqa(d, ["Panthers"]), vqa, "answers")
    assert_missing_column(lambda d: utils.process_vqa(d, ["Panthers"]), vqa, "gray_level")
    ocr = {"word": "house", "font_size": 16, "gray_level": 64}
    assert_missing_column(lambda d: utils.process_ocr(d, ["house"]), ocr, "font_size")
    short = {"sample_id": "short-000", "condition": "baseline"}
    assert_missing_column(lambda d: utils.process_short(d, ["positive"]), short, "condition")
