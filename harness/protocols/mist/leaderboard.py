"""MIST on the leaderboard, from the task report the server recomputes: the judge's change rate and
prompt-edit control rate under misleading images, the image-following ratio, agreement with the human
majority (the task report's intervals: bootstrap over items), and per human panel the share of prompting
techniques that pass the alt-test (a count of verdicts, with no interval)."""

from __future__ import annotations

from harness.protocols.leaderboard_hooks import Estimate, Evidence, Figure, LeaderboardHooks, estimate
from harness.results.interval import Interval

REPORTED = (
    ("change_rate_misleading", "change rate (misleading)", False),
    ("control_rate_misleading", "prompt-edit control rate", None),
    ("image_following_misleading", "image-following ratio", False),
    ("agreement_misleading", "agreement (misleading)", True),
)
PANELS = ("informed", "blind")
FIGURES = (
    *(Figure(key, label, higher_is_better=better) for key, label, better in REPORTED),
    *(Figure(f"alt_test_{panel}", f"alt-test pass, {panel} panel", higher_is_better=True) for panel in PANELS),
)


def _headline(evidence: Evidence) -> dict[str, Estimate]:
    out: dict[str, Estimate] = {}
    for report in evidence.reports.values():
        if "figures" not in report:
            continue
        for key, _, _ in REPORTED:
            figure = report["figures"].get(key) or {}
            out[key] = estimate(figure.get("value"), figure.get("interval"), report["items"])
        for panel in PANELS:
            results = report.get("alt_test", {}).get(panel, {})
            if results:
                passed = sum(bool(r.get("passed")) for r in results.values())
                why = Interval.missing("a share of alt-test verdicts, one per technique", len(results), "technique")
                out[f"alt_test_{panel}"] = Estimate(passed / len(results), why, len(results))
    return out


HOOKS = LeaderboardHooks(figures=FIGURES, headline=_headline, card="https://huggingface.co/datasets/vlm-audit/mist")
