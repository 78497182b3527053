"""The protocols' leaderboard hooks as the leaderboard finds them: each registered protocol's
``Protocol.extensions["leaderboard"]`` (the types are the protocol layer's,
:mod:`harness.protocols.leaderboard_hooks`), loaded on first use, and its option values resolved.
The leaderboard's generic modules read these hooks for every registered protocol and never name one.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.errors import HarnessError
from harness.protocols.base import Protocol, protocols
from harness.protocols.leaderboard_hooks import LeaderboardHooks, Options

EXTENSION = "leaderboard"


def hooks_of(protocol: Protocol) -> LeaderboardHooks | None:
    """The protocol's leaderboard hooks, if it supplies any: a ``LeaderboardHooks`` or the ``module:name``
    of one (imported on first use, so that listing protocols stays cheap); anything else is refused."""
    hooks = protocol.extensions.get(EXTENSION)
    if isinstance(hooks, str):
        module, _, name = hooks.partition(":")
        hooks = getattr(importlib.import_module(module), name, None)
    if hooks is not None and not isinstance(hooks, LeaderboardHooks):
        raise HarnessError(f"protocol {protocol.name}: extensions[{EXTENSION!r}] is not a LeaderboardHooks")
    return hooks


def board_protocols() -> list[tuple[Protocol, LeaderboardHooks]]:
    """Every registered protocol with leaderboard hooks, by name."""
    return [(p, h) for p in protocols() if (h := hooks_of(p)) is not None]


def resolve_options(hooks: LeaderboardHooks, given: Options | None) -> dict[str, Any]:
    """The protocol's option values: defaults, overridden by ``given`` (an unknown name is refused)."""
    known = {o.name: o for o in hooks.options}
    unknown = sorted(set(given or {}) - set(known))
    if unknown:
        raise HarnessError(f"unknown leaderboard option(s) {', '.join(unknown)}; known: {', '.join(known) or 'none'}")
    return {name: (given or {}).get(name, o.default) for name, o in known.items()}
