"""A run's generation settings: one value from the task's config to the backend and into ``results.json``.

:class:`GenerationParams` is the decoding settings of a request (what a backend receives, what request keys
hash); :class:`RequestSettings` adds how many answers each prompt gets, and is what ``provenance.generation``
records per task, written flat (the settings' keys, then ``n``) as every results file has written them. The
engine resolves both once per task (``harness.engine.settings``); every later reader reads the record.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from harness.display import short_repr
from harness.errors import UnsupportedRequestError

#: The most stop strings one request may carry, and the longest one: every generated text is searched for
#: each of them (and ``hf:`` checks each at every step), so a task's list must not set a run's cost.
MAX_UNTIL = 64
MAX_STOP_LENGTH = 1000
_GREEDY_DEFAULTS = {"max_new_tokens": 256, "temperature": 0.0, "top_p": 1.0, "top_k": None, "num_beams": 1}


def _is_whole(value: Any) -> bool:
    """An int, or a float without a fraction (YAML and JSON may spell 64 as 64.0); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# Each setting's check and what it expects; null (None) always means the default.
_SETTING_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "max_new_tokens": (lambda v: _is_whole(v) and v >= 1, "a whole number >= 1"),
    "temperature": (lambda v: _is_finite(v) and v >= 0, "a finite number >= 0"),
    "top_p": (lambda v: _is_finite(v) and 0 < v <= 1, "a finite number > 0 and <= 1"),
    "top_k": (lambda v: _is_whole(v) and v >= 1, "a whole number >= 1 or null"),
    "num_beams": (lambda v: _is_whole(v) and v >= 1, "a whole number >= 1"),
}


@dataclass(frozen=True)
class GenerationParams:
    """Decoding settings of one request; every key a task may set is named here or rejected."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int | None = None
    num_beams: int = 1
    until: tuple[str, ...] = ()

    @property
    def do_sample(self) -> bool:
        """Whether these settings sample (temperature above 0) rather than decode greedily."""
        return self.temperature > 0

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any], where: str = "generation_kwargs") -> GenerationParams:
        """Build from a task's ``generation_kwargs`` (or ``--gen-kwargs`` on top of them). Every key's type and
        range is checked, and all problems are reported together, one line each, so a bad value can neither
        crash a run mid-way nor be recorded silently (``inf`` would be written as ``null``)."""
        kw = dict(kwargs)
        problems: list[str] = []
        unknown = sorted(set(kw) - set(_GREEDY_DEFAULTS) - {"do_sample", "until"})
        if unknown:
            problems.append(
                f"unsupported generation setting(s) {', '.join(unknown)} "
                f"(supported: {', '.join([*_GREEDY_DEFAULTS, 'do_sample', 'until'])})"
            )
        values = _checked_values(kw, problems)
        until = _checked_until(kw, problems)
        do_sample = kw.get("do_sample")
        if do_sample is not None and not isinstance(do_sample, bool):
            problems.append(f"do_sample={short_repr(do_sample)}: expected true or false")
            do_sample = None
        if not problems:
            problems.extend(_conflicts(float(values["temperature"]), int(values["num_beams"]), do_sample))
        if len(problems) == 1:
            raise UnsupportedRequestError(f"{where}: {problems[0]}")
        if problems:
            raise UnsupportedRequestError("\n  ".join([f"{where}: {len(problems)} invalid settings:", *problems]))
        return cls(
            max_new_tokens=int(values["max_new_tokens"]),
            temperature=float(values["temperature"]),
            top_p=float(values["top_p"]),
            top_k=None if values["top_k"] is None else int(values["top_k"]),
            num_beams=int(values["num_beams"]),
            until=tuple(until),
        )

    @staticmethod
    def merge(task_kwargs: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        """A task's generation kwargs with command-line overrides on top. Overriding the temperature
        also replaces the task's ``do_sample`` (``temperature=0.7`` on a greedy task means: sample)."""
        merged = {**task_kwargs, **overrides}
        if "temperature" in overrides and "do_sample" not in overrides:
            merged.pop("do_sample", None)
        return merged

    def as_dict(self) -> dict[str, Any]:
        """The settings as stored in provenance and hashed into request keys."""
        return {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "num_beams": self.num_beams,
            "until": list(self.until),
            "do_sample": self.do_sample,
        }


def _checked_values(kw: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """Each numeric setting's value (its greedy default when absent); a wrong type or range is a problem."""
    values: dict[str, Any] = {}
    for key, default in _GREEDY_DEFAULTS.items():
        value = kw.get(key)
        ok, expected = _SETTING_CHECKS[key]
        if value is None:
            values[key] = default
        elif ok(value):
            values[key] = value
        else:
            problems.append(f"{key}={short_repr(value)}: expected {expected}")
    return values


def _checked_until(kw: dict[str, Any], problems: list[str]) -> tuple[str, ...]:
    """``until`` as a tuple of stop strings (one string is a list of one); anything else is a problem."""
    until = kw.get("until") or ()
    if isinstance(until, str):
        until = (until,)
    if not isinstance(until, list | tuple) or not all(isinstance(u, str) for u in until):
        problems.append(f"until={short_repr(kw['until'])}: expected a string or a list of strings")
        return ()
    if len(until) > MAX_UNTIL:
        problems.append(f"until holds {len(until)} stop strings; at most {MAX_UNTIL} are allowed")
        return ()
    longest = max((len(u) for u in until), default=0)
    if longest > MAX_STOP_LENGTH:
        problems.append(f"until holds a stop string of {longest} characters; at most {MAX_STOP_LENGTH} are allowed")
        return ()
    return tuple(until)


def _conflicts(temperature: float, num_beams: int, do_sample: bool | None) -> list[str]:
    """Settings that are valid alone but contradict each other."""
    problems = []
    if do_sample is False and temperature > 0:
        problems.append(f"do_sample is false but temperature is {temperature}; set one or the other")
    if do_sample is True and temperature == 0.0:
        problems.append("do_sample is true but temperature is 0; set a temperature")
    if num_beams > 1 and temperature > 0:
        problems.append("beam search with sampling is not supported (num_beams > 1 with temperature > 0)")
    return problems


class RequestSettings(BaseModel):
    """The settings every first-turn request of a task is made with: its decoding settings and ``n`` answers
    per prompt. Recorded flat in ``provenance.generation`` (``GenerationParams.as_dict()`` plus ``n``)."""

    model_config = ConfigDict(frozen=True)

    params: GenerationParams
    n: int = 1

    @model_validator(mode="before")
    @classmethod
    def _from_record(cls, data: Any) -> Any:
        """A flat record (the settings' keys and ``n``) read back through the same checks a task's settings
        pass, so a record no run could have made (``do_sample`` against its temperature) is refused."""
        if not isinstance(data, dict) or "params" in data:
            return data
        settings = {k: v for k, v in data.items() if k != "n"}
        try:
            params = GenerationParams.from_kwargs(settings, where="generation")
        except UnsupportedRequestError as exc:
            raise ValueError(str(exc)) from None
        return {"params": params, "n": data.get("n", 1)}

    @model_serializer
    def _to_record(self) -> dict[str, Any]:
        return {**self.params.as_dict(), "n": self.n}
