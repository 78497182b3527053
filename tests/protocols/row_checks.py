"""Shared by each protocol's row tests: its task glue loaded from ``tasks/<name>/utils.py`` as the task
loader loads it, and the one-line error a doc without a column gives."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from harness.errors import DatasetError
from tests.conftest import ROOT


def task_utils(folder: str) -> ModuleType:
    """``tasks/<folder>/utils.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"{folder}_task_utils", ROOT / "tasks" / folder / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_missing_column(read: Callable[[dict[str, Any]], object], doc: dict[str, Any], column: str) -> None:
    """``read`` on ``doc`` without ``column`` fails with one line naming the column."""
    without = {k: v for k, v in doc.items() if k != column}
    with pytest.raises(DatasetError, match=f"doc has no column '{column}'") as caught:
        read(without)
    assert "\n" not in str(caught.value)
