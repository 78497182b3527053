"""Each protocol's headline figures of one submission (its leaderboard hooks' ``headline``), from the
server's re-scored samples, values and reports of the protocol's tasks."""

from __future__ import annotations

from typing import Any

from harness.leaderboard.bundle import Bundle, SubmissionError
from harness.leaderboard.checks import TaskCheck
from harness.leaderboard.hooks import board_protocols
from harness.protocols.leaderboard_hooks import Evidence
from harness.results.schema import SampleRecord


def headlines(
    bundle: Bundle,
    checks: dict[str, TaskCheck],
    results: dict[str, dict[str, Any]],
    reports: dict[str, dict[str, Any]],
    samples: dict[str, list[SampleRecord]],
) -> dict[str, dict[str, dict[str, Any]]]:
    """Protocol -> figure -> estimate, for each protocol with a headline hook and re-scored tasks here (tasks
    that could not be re-scored are left out)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for protocol, hooks in board_protocols():
        tasks = [t for t, c in checks.items() if c.protocol == protocol.name and t in samples]
        if hooks.headline is None or not tasks:
            continue
        evidence = Evidence(
            model=bundle.model,
            model_type=bundle.run.provenance.model.model_type,
            results={t: results[t] for t in tasks},
            reports={t: reports[t] for t in tasks if t in reports},
            samples={t: samples[t] for t in tasks},
        )
        try:
            figures = hooks.headline(evidence)
        except Exception as exc:  # the protocol's code broke on the submitted samples
            raise SubmissionError(
                f"{protocol.name}: the headline figures cannot be computed from the samples "
                f"({type(exc).__name__}: {exc})"
            ) from None
        out[protocol.name] = {key: estimate.as_json() for key, estimate in figures.items()}
    return out
