"""diavlo on the leaderboard: its headline figures."""

from __future__ import annotations

from harness.leaderboard.hooks import LeaderboardHooks

HOOKS = LeaderboardHooks()
