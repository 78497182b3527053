"""What a dataset builder is, as protocols declare it (``Protocol.builders``) and ``harness build`` runs it.

A leaf module: protocols name their builders here without importing the ``builders`` package, which sits
above them (a builder may use its protocol's code; a protocol never imports a builder).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from harness.errors import HarnessError

_MODULE_NAMES = ("REPO_ID", "Options", "build")


class BuilderModule(Protocol):
    """What a builder's module holds, as ``harness build`` and a missing-dataset hint use it."""

    REPO_ID: str  # the Hub id of the dataset it makes (vlm-audit/vista)
    Options: type[Any]  # the frozen dataclass of its options (builders.options reads its fields)

    def build(self, out: Path, options: Any) -> Path:
        """Write the dataset into ``out`` with ``options`` (an ``Options``); the folder written."""
        ...


@dataclass(frozen=True)
class Builder:
    """A dataset builder as ``harness build --help`` lists it and a missing-dataset error names it."""

    name: str
    module: str  # the module holding REPO_ID, Options and build
    description: str
    extra: str | None = None  # the pip extra its optional dependencies come from
    inputs: str = ""  # the source options a build needs (the builder fetches nothing else)
    aliases: tuple[str, ...] = ()

    def load(self) -> BuilderModule:
        """The builder's module (imported on use: its dependencies may be an extra's); one lacking a
        :class:`BuilderModule` name is refused in one line naming the builder and what it lacks."""
        module = importlib.import_module(self.module)
        missing = [name for name in _MODULE_NAMES if not hasattr(module, name)]
        if missing:
            raise HarnessError(f"builder {self.name!r}: module {self.module} has no {', '.join(missing)}")
        return cast(BuilderModule, module)
