"""VISTA's pool settings read the mode strings of stored options as their Literal types, and refuse a value
from outside them in one line."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import HarnessError
from harness.protocols.vista.pool import PoolSettings


def _pool_options(**changed: Any) -> dict[str, Any]:
    return {
        "task": "vista",
        "judge": "embedding",
        "alpha": 0.5,
        "theta": 0.6,
        "clustering": "components",
        "reference": "all",
        **changed,
    }


def test_pool_settings_read_the_modes_of_stored_options() -> None:
    settings = PoolSettings.from_options(_pool_options(clustering="strict", reference="peers"))
    assert (settings.clustering, settings.reference) == ("strict", "peers")


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"clustering": "loose"}, "clustering rule must be 'components' or 'strict', got 'loose'"),
        ({"reference": "others"}, "reference must be 'all' or 'peers', got 'others'"),
    ],
)
def test_pool_settings_refuse_an_unknown_mode(changed: dict[str, str], message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        PoolSettings.from_options(_pool_options(**changed))
