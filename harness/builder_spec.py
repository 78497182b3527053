"""What a dataset builder is, as protocols declare it (``Protocol.builders``) and ``harness build`` runs it.

A leaf module: protocols name their builders here without importing the ``builders`` package, which sits
above them (a builder may use its protocol's code; a protocol never imports a builder).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Builder:
    """A dataset builder as ``harness build --help`` lists it and a missing-dataset error names it."""

    name: str
    module: str  # the module holding REPO_ID, Options and build
    description: str
    extra: str | None = None  # the pip extra its optional dependencies come from
    inputs: str = ""  # the source options a build needs (the builder fetches nothing else)
    aliases: tuple[str, ...] = ()

    def load(self) -> Any:
        """The builder's module (imported on use: its dependencies may be an extra's)."""
        return importlib.import_module(self.module)
