"""The protocols' parts of the pages, read through their leaderboard hooks: the panels (e.g. a
cross-model pool) and the figures that depend on other submissions."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from harness.leaderboard.db import Database
from harness.leaderboard.hooks import board_protocols
from harness.leaderboard.pool_store import DatabasePoolStore
from harness.leaderboard.public import redact
from harness.leaderboard.service import Settings
from harness.protocols.base import Protocol
from harness.protocols.leaderboard_hooks import Estimate, LeaderboardHooks, Panel


@dataclass(frozen=True)
class BoardParts:
    """What the protocols add to one drawing of the pages."""

    protocols: tuple[tuple[Protocol, LeaderboardHooks], ...]
    panels_by_protocol: dict[str, tuple[Panel, ...]] = field(default_factory=dict)
    pooled: dict[str, dict[int, dict[str, Estimate]]] = field(default_factory=dict)  # protocol -> id -> figures

    @property
    def panels(self) -> list[Panel]:
        """Every protocol's panels in one list."""
        return [p for panels in self.panels_by_protocol.values() for p in panels]

    def protocol(self, name: str) -> Protocol | None:
        """The protocol called ``name`` or one of its aliases."""
        return next((p for p, _ in self.protocols if name in p.names), None)

    def panel(self, key: str) -> Panel | None:
        """The panel with key ``key``, or None."""
        return next((p for p in self.panels if p.key == key), None)

    def state(self, protocol: str, pending: int) -> dict[str, Any]:
        """The public JSON of a protocol's part: its panels' data and how many of its jobs are pending."""
        return {
            "protocol": protocol,
            "pending": pending,
            "panels": {p.key: dict(p.data) for p in self.panels_by_protocol.get(protocol, ())},
        }

    def model_notes(self, submission_id: int) -> list[tuple[str, str]]:
        """(panel title, line) of every panel that says something about this submission."""
        return [(p.title, p.model_notes[submission_id]) for p in self.panels if submission_id in p.model_notes]


def _public(panel: Panel) -> Panel:
    """A panel as published: no local paths in its text, model names or data."""
    return replace(
        panel,
        title=redact(panel.title),
        message=redact(panel.message),
        members=tuple((i, redact(m)) for i, m in panel.members),
        data=redact(dict(panel.data)),
        csv=redact(panel.csv),
        model_notes={i: redact(n) for i, n in panel.model_notes.items()},
    )


def board_parts(db: Database, settings: Settings) -> BoardParts:
    """Every protocol's panels and pooled figures, read now."""
    found = tuple(board_protocols())
    panels: dict[str, tuple[Panel, ...]] = {}
    pooled: dict[str, dict[int, dict[str, Estimate]]] = {}
    for protocol, hooks in found:
        options, store = settings.options(protocol.name, hooks), DatabasePoolStore(db, protocol.name)
        if hooks.panels is not None:
            panels[protocol.name] = tuple(_public(p) for p in hooks.panels(store, options))
        if hooks.pooled is not None:
            pooled[protocol.name] = {i: dict(f) for i, f in hooks.pooled(store, options).items()}
    return BoardParts(found, panels, pooled)
