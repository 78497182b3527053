"""How a task's docs become prompts: its docs (``process_docs``), prompts (few-shot context, images, turns
and rounds -> :class:`ChatMessage` lists), targets and choices, for one model family.

:class:`TaskPrompts` is the first half of an opened task (``harness.engine.tasks.open_task``); the second,
``harness.engine.task_scoring.TaskScorer``, scores the answers. Both run the task's code in one module scope.
"""

from __future__ import annotations

import ast
import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.display import short_repr
from harness.errors import TaskConfigError
from harness.models.messages import ChatMessage, from_lmms
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import FunctionRef, ModuleScope

if TYPE_CHECKING:
    from harness.engine.fewshot import FewShotSampler

log = logging.getLogger(__name__)
#: The most choices one ``multiple_choice`` doc may have: each is a request scored by the model.
MAX_CHOICES = 1000


class BadInputError(Exception):
    """A doc could not be turned into a prompt or scored (an undecodable image, a null or missing field)."""


@contextmanager
def doc_step(step: str) -> Iterator[None]:
    """Task code failing on one doc is that doc's error (named by the step), not the run's end; a task's
    configuration mistakes (TaskConfigError) still stop the run."""
    try:
        yield
    except TaskConfigError:
        raise
    except BadInputError as exc:
        raise BadInputError(f"{step}: {exc}") from exc
    except Exception as exc:
        raise BadInputError(f"{step}: {type(exc).__name__}: {exc}") from exc


def _is_image(value: Any) -> bool:
    return hasattr(value, "tobytes") and hasattr(value, "mode") and hasattr(value, "size")


def strip_images(doc: dict[str, Any]) -> dict[str, Any]:
    """The doc as ``process_results`` sees it: image columns removed, as lmms-eval does."""
    out = {}
    for key, value in doc.items():
        if _is_image(value) or (isinstance(value, list) and value and all(_is_image(v) for v in value)):
            continue
        if isinstance(value, dict) and (("bytes" in value and "path" in value) or "image_sha256" in value):
            continue
        out[key] = value
    return out


MULTI_ROUND = "generate_until_multi_round"


@dataclass(frozen=True)
class RoundStep:
    """What a multi-round task's ``doc_to_text`` asks next: the round's messages, or the end and the result."""

    messages: list[ChatMessage]
    context: str
    terminal: bool
    results: list[Any]  # the answers so far as the task keeps them; the doc's result when terminal
    info: Any


def _decoded(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages, with every image decoded now, so a corrupt file is this doc's error."""
    with doc_step("image"):
        for message in messages:
            for image in message.images:
                if not _is_image(image):
                    raise BadInputError(f"image is {type(image).__name__}, not a decoded image")
                image.load()
    return messages


def _call_with_kwargs(fn: Callable[..., Any], doc: Any, kwargs: dict[str, Any] | None) -> Any:
    """Call ``fn(doc, lmms_eval_specific_kwargs)`` when it takes a second argument, as lmms-eval does."""
    try:
        n_params = len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        n_params = 2
    return fn(doc, kwargs) if n_params >= 2 else fn(doc)


def task_function(value: Any, key: str, modules: ModuleScope) -> Callable[..., Any] | None:
    """A task key that must be a ``!function`` (or absent), resolved in the task's module scope."""
    if value is None:
        return None
    if isinstance(value, FunctionRef):
        return value.resolve(modules)
    raise TaskConfigError(f"{key} must be a !function reference, got {value!r}")


def _maybe_function(value: Any, modules: ModuleScope) -> Callable[..., Any] | None:
    """A key that may be a ``!function`` or a field/template: the function, resolved once, else None."""
    return value.resolve(modules) if isinstance(value, FunctionRef) else None


class TaskPrompts:
    """A task's docs, prompts, targets and choices for one model family, its functions resolved in
    ``modules`` (the opened task's one module scope, which its scorer shares)."""

    def __init__(self, config: TaskConfig, model_family: str | None, modules: ModuleScope) -> None:
        self.config = config
        self.specific_kwargs = config.specific_kwargs(model_family)
        self.target_kwargs = config.target_kwargs(model_family)
        self._warned_literal = False
        self._doc_to_visual = task_function(config.doc_to_visual, "doc_to_visual", modules)
        self._doc_to_messages = task_function(config.doc_to_messages, "doc_to_messages", modules)
        self._process_docs = task_function(config.process_docs, "process_docs", modules)
        # doc_to_text / doc_to_target may be a !function or a field/template: resolve functions once.
        self._doc_to_text = _maybe_function(config.doc_to_text, modules)
        self._doc_to_target = _maybe_function(config.doc_to_target, modules)
        self._doc_to_choice = _maybe_function(config.doc_to_choice, modules)
        self.fewshot: FewShotSampler | None = None  # set by open_task for num_fewshot > 0
        if self._doc_to_messages is None and config.doc_to_text is None:
            raise TaskConfigError(f"{config.source}: task {config.task} needs doc_to_text or doc_to_messages")

    def process_docs(self, docs: Any) -> Any:
        """The task's ``process_docs`` over the whole dataset; failing there is the task's error, in one line."""
        if self._process_docs is None:
            return docs
        try:
            return self._process_docs(docs)
        except TaskConfigError:
            raise
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise TaskConfigError(
                f"task {self.config.task}: process_docs failed ({type(exc).__name__}: {first}); "
                f"check {self.config.source.parent}"
            ) from exc

    def text(self, doc: dict[str, Any]) -> str:
        """The doc's ``doc_to_text``."""
        if self._doc_to_text is not None:
            return str(_call_with_kwargs(self._doc_to_text, doc, self.specific_kwargs))
        return _render_field(self.config.doc_to_text, doc)

    @staticmethod
    def render(spec: str, doc: dict[str, Any]) -> str:
        """A column name or a Jinja2 template over the doc (``description``, ``harness_turns``)."""
        return _render_field(spec, doc)

    def build_messages(self, doc: dict[str, Any]) -> list[ChatMessage]:
        """The chat messages for a doc: doc_to_messages, or images first then doc_to_text."""
        if self._doc_to_messages is not None:
            with doc_step("doc_to_messages"):
                messages = from_lmms(_call_with_kwargs(self._doc_to_messages, doc, self.specific_kwargs))
        else:
            with doc_step("doc_to_visual"):
                visuals = self._doc_to_visual(doc) if self._doc_to_visual else []
            with doc_step("doc_to_text"):
                shots = self.fewshot.context(doc) if self.fewshot is not None else ""
                text = shots + self.text(doc)
            messages = [ChatMessage.user(text, visuals or [])]
        return _decoded(messages)

    def next_round(self, doc: dict[str, Any], previous_output: list[str], round_idx: int, info: Any) -> RoundStep:
        """Round ``round_idx`` of a ``generate_until_multi_round`` task: its ``doc_to_text`` called as
        lmms-eval's models call it, checked to return (visuals, context, terminal_signal, round_results,
        round_info)."""
        if self._doc_to_text is None:
            raise TaskConfigError(
                f"{self.config.source}: a generate_until_multi_round task needs doc_to_text as a !function"
            )
        with doc_step("doc_to_text"):
            step = self._doc_to_text(
                doc,
                lmms_eval_specific_kwargs=self.specific_kwargs,
                previous_output=list(previous_output),
                round_idx=round_idx,
                previous_round_info=info,
            )
            if not isinstance(step, tuple | list) or len(step) != 5:
                raise BadInputError(
                    f"round {round_idx} returned {type(step).__name__}, not (visuals, context, "
                    "terminal_signal, round_results, round_info)"
                )
        visuals, context, terminal, results, next_info = step
        if terminal:
            return RoundStep([], "", True, list(results or []), next_info)
        return RoundStep(
            _decoded([ChatMessage.user(str(context), visuals or [])]),
            str(context),
            False,
            list(results or []),
            next_info,
        )

    def choices(self, doc: dict[str, Any]) -> list[str]:
        """A ``multiple_choice`` doc's choices, read as lmms-eval reads ``doc_to_choice``: a column, a template
        that renders a Python list, a list, a mapping (its values) or a function."""
        spec = self.config.doc_to_choice
        with doc_step("doc_to_choice"):
            if self._doc_to_choice is not None:
                value = self._doc_to_choice(doc)
            elif isinstance(spec, dict):
                value = list(spec.values())
            elif isinstance(spec, str):
                value = doc[spec] if spec in doc else ast.literal_eval(_render_field(spec, doc))
            else:
                value = spec
            if not isinstance(value, list | tuple) or not value:
                raise BadInputError(f"choices are {short_repr(value)}, not a non-empty list")
            if len(value) > MAX_CHOICES:
                raise BadInputError(f"{len(value)} choices; at most {MAX_CHOICES} are scored for one doc")
            return [str(v) for v in value]

    def continuations(self, doc: dict[str, Any]) -> list[str]:
        """The texts scored after the prompt: ``target_delimiter`` + each choice; for ``loglikelihood`` the
        doc's target as it is (lmms-eval passes ``doc_to_target``'s value with no delimiter)."""
        if self.config.output_type == "loglikelihood":
            target = self.target(doc)
            if target is None or isinstance(target, list | dict):
                raise BadInputError(f"doc_to_target gives {target!r}, not one text to score")
            return [str(target)]
        return [f"{self.config.target_delimiter}{c}" for c in self.choices(doc)]

    def target(self, doc: dict[str, Any]) -> Any:
        """The doc's target; a field that is null is this doc's bad input, never the string 'None'."""
        spec = self.config.doc_to_target
        if spec is None:
            return None
        if self.config.output_type == "multiple_choice" and isinstance(spec, str) and self._doc_to_target is None:
            with doc_step("doc_to_target"):
                return _choice_target(spec, doc)
        with doc_step("doc_to_target"):
            if self._doc_to_target is not None:
                return self._call_target(doc)
            if isinstance(spec, int):
                return spec
            if isinstance(spec, str) and spec not in doc and not _is_template(spec) and not self._warned_literal:
                self._warned_literal = True
                log.warning(
                    "task %s: doc_to_target %r names no column and is no template; every doc gets it "
                    "as a literal target",
                    self.config.task,
                    spec,
                )
            return _render_field(spec, doc)

    def _call_target(self, doc: dict[str, Any]) -> Any:
        """A ``doc_to_target`` function called as lmms-eval calls it: with the model's
        ``model_specific_target_kwargs`` value when the task sets one, else with the doc alone."""
        assert self._doc_to_target is not None
        if self.target_kwargs is not None:
            return self._doc_to_target(doc, self.target_kwargs)
        return self._doc_to_target(doc)

    def gold(self, doc: dict[str, Any]) -> Any:
        """The reference(s) lmms-eval's built-in metrics compare with: ``doc_to_target``'s value as lmms-eval
        reads it (a column's value as it is, a list kept a list), a choice index turned into its choice."""
        spec = self.config.doc_to_target
        if self._doc_to_target is not None:
            gold = self._call_target(doc)
        elif isinstance(spec, str) and self.config.doc_to_choice is not None:
            gold = _choice_target(spec, doc)
        elif isinstance(spec, str):
            gold = _not_null(doc[spec]) if spec in doc else _list_literal(_render_field(spec, doc))
        else:
            gold = spec
        if self.config.doc_to_choice is not None and isinstance(gold, int):
            return self.choices(doc)[gold]
        return gold

    def follow_ups(self, doc: dict[str, Any]) -> list[str]:
        """The user turns that follow the answer, from ``metadata: {harness_turns: [...]}`` (each a doc
        column name or a Jinja2 template over the doc). lmms-eval ignores the key and runs turn 1 only."""
        with doc_step("harness_turns"):
            return [_render_field(turn, doc) for turn in self.config.harness_turns]


def _choice_target(spec: str, doc: dict[str, Any]) -> Any:
    """A multiple_choice gold as lmms-eval reads it: a column's value as it is (an index or a choice), or a
    template rendering a digit (an index) or a list literal (several golds)."""
    if spec in doc:
        return _not_null(doc[spec])
    text = _render_field(spec, doc)
    return int(text) if text.isdigit() else _list_literal(text)


def _list_literal(text: str) -> Any:
    """A rendered target that reads as a Python list literal, as that list (lmms-eval's reading)."""
    if len(text) >= 2 and text[0] == "[" and text[-1] == "]":
        try:
            return ast.literal_eval(text)
        except (SyntaxError, ValueError):
            return text
    return text


def _is_template(spec: str) -> bool:
    return "{{" in spec or "{%" in spec


def _not_null(value: Any) -> Any:
    if value is None:
        raise BadInputError("a value it prints is null")
    return value


@functools.cache
def _template(spec: str) -> Any:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, finalize=_not_null, autoescape=False)
    return env.from_string(spec)


def _render_field(spec: Any, doc: dict[str, Any]) -> str:
    """A doc_to_text/doc_to_target string: a column name, or a Jinja2 template over the doc. A null value
    is the doc's bad input: rendering it would score a missing answer as the string 'None'."""
    if isinstance(spec, str) and spec in doc:
        if doc[spec] is None:
            raise BadInputError(f"column {spec!r} is null")
        return str(doc[spec])
    import jinja2

    try:
        return str(_template(str(spec)).render(**doc))
    except (jinja2.TemplateError, BadInputError) as exc:
        raise BadInputError(f"template {spec!r}: {exc}") from exc
