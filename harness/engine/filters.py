"""lmms-eval's response filters (``filter_list``): from a sample's n responses to the answer(s) a metric scores.

A step is one of lmms-eval 0.7.3's built-in filter names (``lmms_eval.filters.FILTER_REGISTRY``, written
here with the same semantics) or a ``!function`` naming a filter class in the task's code (lmms-eval's
``Filter`` protocol: built with the step's keys, ``apply(resps, docs)`` over a list of samples; here a list
of one).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

from harness.errors import TaskConfigError
from harness.taskspec.config import FilterPipeline, FilterStep
from harness.taskspec.yaml_loader import FunctionRef, ModuleScope

#: One resolved step: (the sample's current answers, its doc) -> its next answers.
Step = Callable[[list[Any], dict[str, Any]], list[Any]]


def _take_first(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return resps[:1]


def _take_first_k(resps: list[Any], kw: dict[str, Any]) -> list[Any]:
    return resps[: int(kw.get("k", 1))]


def _lowercase(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return [r.lower() for r in resps]


def _uppercase(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return [r.upper() for r in resps]


def _remove_whitespace(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    """lmms-eval's ``WhitespaceFilter``: one leading space removed (not all leading whitespace)."""
    return [r[1:] if r.startswith(" ") else r for r in resps]


def _map(resps: list[Any], kw: dict[str, Any]) -> list[Any]:
    mapping = kw.get("mapping_dict") or {}
    if not isinstance(mapping, dict):
        raise TaskConfigError(f"filter map: mapping_dict must be a mapping, got {mapping!r}")
    return [mapping.get(r, kw.get("default_value")) for r in resps]


def _first_match(regex: re.Pattern[str], text: str, group: int) -> str | None:
    """The ``group``-th of ``regex``'s matches in ``text`` (its first non-empty group when it has groups),
    stripped; None when it does not match."""
    matches = regex.findall(text)
    if not matches:
        return None
    match = matches[group]
    if isinstance(match, tuple):
        match = next((m for m in match if m), "")
    return str(match).strip()


def _regex(resps: list[Any], kw: dict[str, Any]) -> list[Any]:
    pattern = re.compile(kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
    group = int(kw.get("group_select", 0))
    fallback = kw.get("fallback", "[invalid]")
    out = []
    for r in resps:
        match = _first_match(pattern, r, group)
        out.append(fallback if match is None else match)
    return out


@cache
def _punctuation_table() -> dict[int, None]:
    """Every Unicode punctuation code point, deleted (lmms-eval's ``ignore_punctuation`` in filters)."""
    return dict.fromkeys(i for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P"))


def _multi_choice_regex(resps: list[Any], doc: dict[str, Any], kw: dict[str, Any]) -> list[Any]:
    """lmms-eval's ``multi_choice_regex``: the pattern's match; failing that, a choice's text (compared after
    the ignore options) mapped to its letter as ``(A)``; failing that, ``: B`` mapped to ``(B)``; else the
    fallback. The doc's ``choices`` column lists the choices."""
    group = int(kw.get("group_select", 0))
    fallback = kw.get("fallback", "[invalid]")

    def ignored(text: str) -> str:
        for pattern in kw.get("regexes_to_ignore") or []:
            text = re.sub(pattern, "", text)
        if kw.get("ignore_case"):
            text = text.lower()
        return text.translate(_punctuation_table()) if kw.get("ignore_punctuation") else text

    if "choices" not in doc:
        raise TaskConfigError("filter multi_choice_regex needs a 'choices' column in the doc")
    letters = [chr(ord("A") + i) for i in range(len(doc["choices"]))]
    to_letter = {ignored(str(c).strip()): f"({letter})" for c, letter in zip(doc["choices"], letters, strict=True)}
    by_text = re.compile("|".join(re.escape(ignored(str(c).strip())) for c in doc["choices"]))
    by_colon = re.compile(r":[\s]*(" + "|".join(letters) + ")")
    pattern = re.compile(kw.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"))
    out = []
    for resp in resps:
        match = _first_match(pattern, resp, group)
        if not match:
            match = _first_match(by_text, ignored(resp), group)
            match = to_letter.get(match, match) if match else match
        if not match:
            match = _first_match(by_colon, resp, group)
            match = f"({match})" if match else match
        out.append(match or fallback)
    return out


def _majority_vote(resps: list[Any], _: dict[str, Any]) -> list[Any]:
    return [Counter(resps).most_common(1)[0][0]] if resps else []


FILTERS: dict[str, Callable[[list[Any], dict[str, Any]], list[Any]]] = {
    "take_first": _take_first,
    "take_first_k": _take_first_k,
    "lowercase": _lowercase,
    "uppercase": _uppercase,
    "remove_whitespace": _remove_whitespace,
    "regex": _regex,
    "majority_vote": _majority_vote,
    "map": _map,
}
#: Built-in filters that read the sample's doc.
DOC_FILTERS = {"multi_choice_regex": _multi_choice_regex}


def check_filters(pipelines: tuple[FilterPipeline, ...], where: str) -> None:
    """Refuse, before any generation, a filter name the harness does not implement (``where`` names the
    task); ``!function`` filters are checked when they are resolved."""
    known = [*FILTERS, *DOC_FILTERS]
    for pipe in pipelines:
        for step in pipe.steps:
            if not isinstance(step.function, FunctionRef) and step.function not in known:
                raise TaskConfigError(
                    f"{where}: filter {step.function!r} is not supported (supported: {', '.join(known)}, "
                    "or a !function filter class)"
                )


def resolve_step(step: FilterStep, where: str, modules: ModuleScope | None = None) -> Step:
    """One step made callable: a built-in with its keys, or the task's filter class built once with them."""
    kwargs = dict(step.kwargs)
    if isinstance(step.function, FunctionRef):
        cls = step.function.resolve(modules)
        try:
            instance = cls(**kwargs)
        except Exception as exc:
            raise TaskConfigError(
                f"{where}: filter {step.function.name} cannot be built from {kwargs!r} ({type(exc).__name__}: {exc})"
            ) from None
        if not callable(getattr(instance, "apply", None)):
            raise TaskConfigError(f"{where}: filter {step.function.name} has no apply(resps, docs) method")
        return lambda resps, doc: _one(instance.apply([resps], [doc]))
    if step.function in DOC_FILTERS:
        fn = DOC_FILTERS[step.function]
        return lambda resps, doc: fn(resps, doc, kwargs)
    builtin = FILTERS[step.function]
    return lambda resps, _doc: builtin(resps, kwargs)


def _one(applied: Any) -> list[Any]:
    """A filter class's output for the one sample it was given: a list of answers (a single answer, as
    ``take_first`` and SimpleMultiChoiceRegexFilter give, becomes a list of one)."""
    (out,) = list(applied)
    return list(out) if isinstance(out, list | tuple) else [out]


def apply_pipeline(steps: list[Step], responses: list[str], doc: dict[str, Any]) -> list[Any]:
    """One filter pipeline's output for a sample's responses: each resolved step applied in order."""
    out: list[Any] = list(responses)
    for step in steps:
        out = step(out, doc)
    return out
