"""A protocol dataset's row, declared once as a frozen dataclass.

A ``Row`` subclass is what a builder writes (``to_dict``, ``features``) and what the protocol's task glue
and audit read (``read``), so its column list exists in one place: renaming a field breaks every
reader of the old name loudly at its first call, and a doc without a column is a one-line
``DatasetError`` naming the dataset and the column.

Field types map to ``datasets`` features: ``str`` -> ``Value("string")``, ``int`` -> ``Value("int64")``,
``float`` -> ``Value("float64")``, ``bool`` -> ``Value("bool")``, the narrower ``Int8``, ``Int32`` and
``Float32``, ``ImageCell`` -> ``Image()``, ``list[X]`` -> ``Sequence(X)`` (``[X]`` when ``X`` is a nested
dataclass, a list of structs), a nested frozen dataclass -> a dict of its fields' features, and
``X | None`` -> the feature of ``X`` (``datasets`` columns are nullable).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from harness.errors import DatasetError


@dataclass(frozen=True)
class Dtype:
    """A narrower ``datasets.Value`` dtype than a Python type's default (``int32`` for an ``int``)."""

    name: str


@dataclass(frozen=True)
class ImageMark:
    """Marks a column stored as ``datasets.Image()``."""


Int8 = Annotated[int, Dtype("int8")]
Int32 = Annotated[int, Dtype("int32")]
Float32 = Annotated[float, Dtype("float32")]
#: What ``datasets.Image`` encodes: a PIL image, ``{"bytes": ..., "path": ...}`` or a file path; a PIL
#: image when read back.
ImageCell = Annotated[Any, ImageMark()]

_SCALARS = {str: "string", bool: "bool", int: "int64", float: "float64"}
_REQUIRED: Any = object()


class Row:
    """Base of a protocol dataset's frozen row dataclass; ``DATASET`` names the dataset in errors."""

    DATASET: ClassVar[str]

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The dataset's column names, in the dataset's order."""
        return _columns(cls)

    @classmethod
    def features(cls) -> Any:
        """The ``datasets.Features`` the builder writes these rows with."""
        # datasets (and pyarrow) load only where a builder needs features, not where a task reads a doc.
        import datasets

        return datasets.Features(_struct(cls, datasets))

    def to_dict(self) -> dict[str, Any]:
        """The row as ``Dataset.from_list`` takes it: nested dataclasses as dicts, values as given."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(_as_dataclass(type(self)))}

    @classmethod
    def read(cls, doc: Mapping[str, Any], column: str, default: Any = _REQUIRED) -> Any:
        """``doc[column]``, checked: ``column`` must be one of this row's (a ``LookupError`` otherwise: the
        caller's bug), and a doc without it is a ``DatasetError`` unless ``default`` is given."""
        if column not in cls.columns():
            raise LookupError(f"{cls.__name__} has no column {column!r}")
        if column in doc:
            return doc[column]
        if default is not _REQUIRED:
            return default
        raise DatasetError(
            f"a {cls.DATASET} doc has no column {column!r}: the dataset is not a current `harness build {cls.DATASET}`"
        )


_COLUMNS: dict[type, tuple[str, ...]] = {}


def _columns(cls: type) -> tuple[str, ...]:
    """``cls``'s field names, computed once per class (``read`` checks every name it is given)."""
    if cls not in _COLUMNS:
        _COLUMNS[cls] = tuple(f.name for f in dataclasses.fields(_as_dataclass(cls)))
    return _COLUMNS[cls]


def _as_dataclass(cls: type) -> Any:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    return cls


def _struct(cls: type, ds: Any) -> dict[str, Any]:
    """``cls``'s fields as features, built with the ``datasets`` module ``ds``."""
    hints = typing.get_type_hints(cls, include_extras=True)
    return {
        f.name: _feature(hints[f.name], f"{cls.__name__}.{f.name}", ds) for f in dataclasses.fields(_as_dataclass(cls))
    }


def _feature(hint: Any, where: str, ds: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is Annotated:
        base, *marks = typing.get_args(hint)
        for mark in marks:
            if isinstance(mark, ImageMark):
                return ds.Image()
            if isinstance(mark, Dtype):
                return ds.Value(mark.name)
        return _feature(base, where, ds)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) != 1:
            raise TypeError(f"{where}: a column holds one type (or None), not {hint}")
        return _feature(options[0], where, ds)
    if origin is list:
        (item,) = typing.get_args(hint)
        inner = _feature(item, where, ds)
        return [inner] if isinstance(inner, dict) else ds.Sequence(inner)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _struct(hint, ds)
    if hint in _SCALARS:
        return ds.Value(_SCALARS[hint])
    raise TypeError(f"{where}: no datasets feature for {hint}")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
