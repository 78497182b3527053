"""lm-eval's response filters (``filter_list``): from n responses to the answer(s) a metric scores."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from harness.errors import TaskConfigError
from harness.taskspec.config import FilterPipeline, FilterStep


def _take_first(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return resps[:1]


def _take_first_k(resps: list[Any], kw: dict[str, Any]) -> list[Any]:
    return resps[: int(kw.get("k", 1))]


def _lowercase(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return [r.lower() for r in resps]


def _remove_whitespace(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return [r.lstrip() for r in resps]


def _regex(resps: list[Any], kw: dict[str, Any]) -> list[Any]:
    pattern = re.compile(kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
    group = int(kw.get("group_select", 0))
    fallback = kw.get("fallback", "[invalid]")
    out = []
    for r in resps:
        matches = pattern.findall(r)
        if not matches:
            out.append(fallback)
            continue
        match = matches[group]
        out.append((next((m for m in match if m), fallback) if isinstance(match, tuple) else match).strip())
    return out


def _majority_vote(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return [Counter(resps).most_common(1)[0][0]] if resps else []


FILTERS = {
    "take_first": _take_first, "take_first_k": _take_first_k, "lowercase": _lowercase,
    "remove_whitespace": _remove_whitespace, "regex": _regex, "majority_vote": _majority_vote,
}


def check_filters(pipelines: tuple[FilterPipeline, ...], where: str) -> None:
    """Refuse, before any generation, a filter the harness does not implement (``where`` names the task)."""
    for pipe in pipelines:
        for step in pipe.steps:
            if step.function not in FILTERS:
                raise TaskConfigError(
                    f"{where}: filter {step.function!r} is not supported (supported: {', '.join(FILTERS)})"
                )


def apply_pipeline(steps: tuple[FilterStep, ...], responses: list[str]) -> list[Any]:
    """One filter pipeline's output for a sample's responses: each step applied in order."""
    out: list[Any] = list(responses)
    for step in steps:
        out = FILTERS[step.function](out, step.kwargs)
    return out
