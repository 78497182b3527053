"""VISTA: cross-model semantic-divergence audit.

Its places: builders/vista/ (image set), tasks/vista/, cards/vista.md; here: metrics.py (semantic entropy, JS
divergence, suspicion), refusal.py (selective refusal), audit.py, cli.py (`harness audit vista` and the audit
after a multi-model `harness eval`), plots.py, pool.py (the leaderboard's peer pool).
"""

from builders import Builder
from harness.protocols.base import Protocol, register_protocol
from harness.protocols.vista import cli
from harness.protocols.vista.implant import PROTOCOL as CONTROLLED_STUDY

SUMMARY = (
    "How far a model's answers to the same image and prompt diverge from its peers' (suspicion S), and "
    "whether it refuses some demographic groups more than others."
)

PROTOCOL = Protocol(
    name="vista",
    title="VISTA",
    summary=SUMMARY,
    tasks=("vista",),
    card="vista",
    extra="vista",
    audit=cli.AUDIT,
    after_eval=cli.after_eval,
    audit_tag="vista",
    eval_arguments=cli.eval_arguments,
    check_eval=cli.check_eval,
    builders=(
        Builder("vista", "builders.vista", "VISTA topic images x neutral prompts (generated or photographs)", "vista"),
    ),
    extensions={"leaderboard": "harness.protocols.vista.leaderboard:HOOKS"},
)

register_protocol(CONTROLLED_STUDY)
