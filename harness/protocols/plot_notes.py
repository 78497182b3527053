"""The one line a protocol report gives for a plot it promises but cannot draw, so a missing file is
never silent (a random-weight model, whose answers parse into nothing, is the usual cause)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def plot_not_drawn(file_name: str, reason: str) -> dict[str, Any]:
    """Warn once that ``file_name`` is not drawn and why; returns the report's record of it."""
    log.warning("%s not drawn: %s", file_name, reason)
    return {"plot": None, "plot_not_drawn": reason}
