r"""What lmms-eval 0.7.3's model classes do to a task's generation settings, so a run can do the same.

Two levels:

- always: a task that sets no ``max_new_tokens`` gets the answer length lmms-eval's class for the model's
  family uses (``llava_hf`` 1024, ``qwen2_vl`` 128, ...; the harness's 256 for families lmms-eval has no
  class for);
- with ``--lmms-model NAME`` (the compatibility mode): the run is prepared as lmms-eval's model class NAME
  prepares it: NAME picks the task's ``lmms_eval_specific_kwargs``, ``model_specific_target_kwargs`` and
  ``model_specific_generation_kwargs`` blocks, a task without ``until`` stops at its ``fewshot_delimiter``
  (lmms-eval's TaskConfig default) and the class's stop handling applies (``llava_hf`` ignores ``until``;
  ``gemma3`` drops a ``"\n\n"`` entry; ``qwen2_vl`` applies all of it).

``harness.engine.settings.resolve_settings`` applies them (the one place a run's generation settings are
worked out); every default applied is recorded in the run (``RunConfig.applied_defaults``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.taskspec.config import TaskConfig

IGNORES_UNTIL, ALL_UNTIL, UNTIL_BUT_BLANK_LINE = "ignored", "applied", "applied without \\n\\n"


@dataclass(frozen=True)
class LmmsModel:
    """One lmms-eval model class's generation defaults (read from ``lmms_eval/models/simple/<name>.py``)."""

    max_new_tokens: int
    until: str  # how it treats the task's ``until``: IGNORES_UNTIL, ALL_UNTIL or UNTIL_BUT_BLANK_LINE


LMMS_MODELS: dict[str, LmmsModel] = {
    "llava_hf": LmmsModel(1024, IGNORES_UNTIL),
    "llava_onevision": LmmsModel(1024, IGNORES_UNTIL),
    "idefics2": LmmsModel(1024, IGNORES_UNTIL),
    "qwen2_vl": LmmsModel(128, ALL_UNTIL),
    "gemma3": LmmsModel(128, UNTIL_BUT_BLANK_LINE),
    "qwen3_vl": LmmsModel(128, UNTIL_BUT_BLANK_LINE),
    "qwen2_5_vl": LmmsModel(32768, UNTIL_BUT_BLANK_LINE),
}


def check_lmms_model(name: str | None) -> None:
    """Refuse, in one line, a ``--lmms-model`` that names no lmms-eval class the harness knows."""
    if name is not None and name not in LMMS_MODELS:
        raise HarnessError(
            f"--lmms-model {name!r} is not one of lmms-eval's model classes the harness reproduces "
            f"(known: {', '.join(sorted(LMMS_MODELS))})"
        )


def from_lmms_eval(config: TaskConfig) -> bool:
    """Whether a task's YAML lies in lmms-eval's own task folders (``.../lmms_eval/tasks/...``)."""
    parts = config.source.resolve().parts
    return any(a == "lmms_eval" and b == "tasks" for a, b in itertools.pairwise(parts))


def reproduce_hint(configs: Sequence[TaskConfig], family: str | None, lmms_model: str | None) -> str | None:
    """The line that names the ``--lmms-model`` class reproducing lmms-eval's numbers for a run of lmms-eval's
    own tasks that names none (without it, the prompts and answer lengths are the harness's own), or None."""
    tasks = [c.task for c in configs if from_lmms_eval(c)]
    if lmms_model is not None or not tasks:
        return None
    named = ", ".join(tasks[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    if family in LMMS_MODELS:
        return (
            f"note: {named} come from lmms-eval's own task folders; --lmms-model {family} reproduces lmms-eval's "
            f"{family} class (its prompt blocks, answer length and stop handling), which this run does not"
        )
    return (
        f"note: {named} come from lmms-eval's own task folders; no --lmms-model class the harness reproduces "
        f"matches this model (family {family}; known: {', '.join(sorted(LMMS_MODELS))})"
    )
