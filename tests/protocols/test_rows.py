"""``harness.protocols.rows``: a dataclass's typed fields become ``datasets.Features``, rows become the
dicts ``Dataset.from_list`` takes, and reading a column is checked against the row's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from harness.errors import DatasetError
from harness.protocols.rows import Float32, ImageCell, Int8, Int32, Row


@dataclass(frozen=True)
class Box:
    label: str
    corners: list[Float32]


@dataclass(frozen=True)
class ToyRow(Row):
    DATASET: ClassVar[str] = "toy"

    id: str
    count: int
    small: Int32
    tiny: Int8
    score: float
    narrow: Float32
    flag: bool
    image: ImageCell
    maybe: str | None
    tags: list[str]
    boxes: list[Box]
    main_box: Box


def _toy() -> ToyRow:
    return ToyRow("a", 1, 2, 3, 0.5, 0.25, True, None, None, ["x"], [Box("b", [1.0])], Box("m", []))


def test_features_follow_the_field_types_in_field_order() -> None:
    from datasets import Features, Image, Sequence, Value

    box = {"label": Value("string"), "corners": Sequence(Value("float32"))}
    expected = Features(
        {
            "id": Value("string"),
            "count": Value("int64"),
            "small": Value("int32"),
            "tiny": Value("int8"),
            "score": Value("float64"),
            "narrow": Value("float32"),
            "flag": Value("bool"),
            "image": Image(),
            "maybe": Value("string"),
            "tags": Sequence(Value("string")),
            "boxes": [box],
            "main_box": box,
        }
    )
    assert ToyRow.features() == expected
    assert list(ToyRow.features()) == list(ToyRow.columns()) == list(expected)


def test_rows_round_trip_through_a_dataset() -> None:
    from datasets import Dataset

    row = _toy()
    assert row.to_dict()["boxes"] == [{"label": "b", "corners": [1.0]}]
    assert row.to_dict()["main_box"] == {"label": "m", "corners": []}
    ds = Dataset.from_list([row.to_dict()], features=ToyRow.features())
    back = ds[0]
    assert back["maybe"] is None and back["image"] is None and back["flag"] is True
    assert back["boxes"] == [{"label": "b", "corners": [1.0]}] and back["small"] == 2


def test_read_checks_the_column_name_and_the_doc() -> None:
    doc = _toy().to_dict()
    assert ToyRow.read(doc, "count") == 1
    assert ToyRow.read({}, "count", 7) == 7
    with pytest.raises(LookupError, match="ToyRow has no column 'cuont'"):
        ToyRow.read(doc, "cuont")
    with pytest.raises(DatasetError, match=r"^a toy doc has no column 'count': .*`harness build toy`$"):
        ToyRow.read({}, "count")


def test_a_type_without_a_feature_is_refused() -> None:
    @dataclass(frozen=True)
    class Bad(Row):
        DATASET: ClassVar[str] = "bad"
        pair: tuple[int, int]

    with pytest.raises(TypeError, match=r"Bad\.pair: no datasets feature"):
        Bad.features()

    @dataclass(frozen=True)
    class Either(Row):
        DATASET: ClassVar[str] = "either"
        value: int | str

    with pytest.raises(TypeError, match=r"Either\.value: a column holds one type"):
        Either.features()
