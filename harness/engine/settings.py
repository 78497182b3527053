r"""The one resolution of a run's generation settings: task config x model family x the run's flags.

``harness eval`` makes every request of a task with the :class:`RequestSettings` :func:`resolve_settings`
returns and records them (``provenance.generation``, ``config.applied_defaults``); ``harness score --verify``
and the leaderboard call it again with the task's own copy and the flags the run declares, and compare;
the audits and attacks that re-ask a run's prompts read the record. Nothing else derives them.

The order, as lmms-eval 0.7.3 applies it:

1. the task's ``generation_kwargs`` (with ``--lmms-model NAME``, updated by NAME's
   ``model_specific_generation_kwargs`` block);
2. a task that sets no ``max_new_tokens`` gets the answer length of lmms-eval's model class for the model's
   family (``llava_hf`` 1024, ``qwen2_vl`` 128, ...: ``harness.engine.lmms_models``; the harness's 256 for a
   family lmms-eval has no class for);
3. under ``--lmms-model``, a task without ``until`` stops at its ``fewshot_delimiter`` (lmms-eval's TaskConfig
   default), and the class's stop handling applies (``llava_hf`` ignores ``until``; ``gemma3`` drops a
   ``"\n\n"`` entry; ``qwen2_vl`` applies all of it);
4. ``--gen-kwargs`` on top (a new temperature also replaces the task's ``do_sample``);
5. ``n``: ``--repeats``, else the task's ``repeats``; each request's seed derives from ``--seed`` and its key
   (``harness.engine.requests``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.engine.lmms_models import IGNORES_UNTIL, LMMS_MODELS, UNTIL_BUT_BLANK_LINE
from harness.engine.task_prompts import MULTI_ROUND
from harness.errors import UnsupportedRequestError
from harness.results.generation import GenerationParams, RequestSettings
from harness.results.schema import RunConfig, ScoringSeeds, SeedPolicy
from harness.taskspec.config import TaskConfig


@dataclass(frozen=True)
class RunFlags:
    """The command-line flags that shape a run's requests: ``--gen-kwargs``, ``--lmms-model``, ``--repeats``
    and ``--seed``. A saved run declares them in its ``config`` (:meth:`of_run`); a checker takes them as
    that claim, derives every request from them and the task, and shows them beside the run's figures."""

    gen_overrides: dict[str, Any] = field(default_factory=dict)
    lmms_model: str | None = None
    repeats: int | None = None
    seed: int = 0

    @classmethod
    def of_run(cls, config: RunConfig) -> RunFlags:
        """The flags a saved run declares."""
        return cls(dict(config.gen_overrides), config.lmms_model, config.repeats, config.seed)

    def seed_policy(self, scoring: ScoringSeeds | None) -> SeedPolicy:
        """The seed rule the run records: each request's seed from ``--seed`` and its key, and the seeds its
        scoring ran under."""
        return SeedPolicy(base_seed=self.seed, scoring=scoring)

    def describe(self) -> str:
        """The flags that move a run away from its tasks' own settings, as typed on the command line
        (``--gen-kwargs max_new_tokens=1 --repeats 3``; empty for a run made as its tasks ask): what every
        table shows beside the run's figures, so runs under other settings are never compared unmarked."""
        parts = []
        if self.gen_overrides:
            parts.append("--gen-kwargs " + ",".join(f"{k}={_flag_text(v)}" for k, v in self.gen_overrides.items()))
        if self.lmms_model:
            parts.append(f"--lmms-model {self.lmms_model}")
        if self.repeats is not None:
            parts.append(f"--repeats {self.repeats}")
        return " ".join(parts)


def _flag_text(value: Any) -> str:
    """A ``--gen-kwargs`` value as typed: JSON for lists and booleans, the plain text of a number or string."""
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class TaskSettings:
    """A task's resolved settings: its requests' settings, the lmms-eval defaults that were applied (each
    with where it came from), and the family whose prompt blocks build its prompts."""

    requests: RequestSettings
    applied_defaults: dict[str, Any]
    prompt_family: str | None

    @property
    def params(self) -> GenerationParams:
        """The decoding settings of the task's requests."""
        return self.requests.params

    @property
    def n(self) -> int:
        """Answers per prompt."""
        return self.requests.n


def resolve_settings(config: TaskConfig, family: str | None, flags: RunFlags) -> TaskSettings:
    """The settings of every request of ``config``'s task for a model of lmms-eval ``family`` under ``flags``
    (the module docstring gives the order). A setting no backend can honour fails in one line."""
    where = f"task {config.task} generation_kwargs"
    kwargs, applied = _lmms_defaults(config, family, flags)
    params = GenerationParams.from_kwargs(GenerationParams.merge(kwargs, flags.gen_overrides), where=where)
    n = flags.repeats or config.repeats
    if config.output_type == MULTI_ROUND and n > 1:
        raise UnsupportedRequestError(
            f"task {config.task}: a generate_until_multi_round task answers once per doc "
            f"(its rounds follow one answer); got repeats {n}"
        )
    return TaskSettings(
        requests=RequestSettings(params=params, n=n),
        applied_defaults=applied,
        prompt_family=flags.lmms_model or family,
    )


def _lmms_defaults(config: TaskConfig, family: str | None, flags: RunFlags) -> tuple[dict[str, Any], dict[str, Any]]:
    """Steps 1-3: the task's generation kwargs with lmms-eval's model-class defaults (for ``family``, or the
    ``--lmms-model`` class), and each default applied with its source; ``--gen-kwargs`` keys are left alone."""
    lmms_model, overrides = flags.lmms_model, flags.gen_overrides
    model = lmms_model or family
    kwargs = config.generation_kwargs_for(model) if lmms_model else dict(config.generation_kwargs)
    applied: dict[str, Any] = {}
    known = LMMS_MODELS.get(model or "")
    if (
        known is not None
        and config.output_type.startswith("generate_until")
        and "max_new_tokens" not in kwargs
        and "max_new_tokens" not in overrides
    ):
        kwargs["max_new_tokens"] = known.max_new_tokens
        applied["max_new_tokens"] = {"value": known.max_new_tokens, "from": f"lmms-eval model {model}"}
    if lmms_model and known is not None and "until" not in overrides:
        until = kwargs.get("until")
        if until is None:
            until = [config.fewshot_delimiter]
            applied["until"] = {"value": until, "from": "lmms-eval TaskConfig default (fewshot_delimiter)"}
        until = [until] if isinstance(until, str) else list(until)
        if known.until == IGNORES_UNTIL:
            until = []
        elif known.until == UNTIL_BUT_BLANK_LINE:
            until = [u for u in until if u != "\n\n"]
        if until != kwargs.get("until"):
            applied["until"] = {"value": until, "from": f"lmms-eval model {model} (until {known.until})"}
        kwargs["until"] = until
    return kwargs, applied
