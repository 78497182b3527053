"""Few-shot prompts as lmms-eval builds them (``api/samplers.py`` ``ContextSampler`` / ``FirstNSampler``,
``ConfigurableTask.fewshot_context``), so a ``num_fewshot`` task puts the same text before the model.

The shots come from ``fewshot_split`` (else the training, validation or test split, in that order); the
``default`` sampler draws them with one ``random.Random(1234)`` (lmms-eval's default few-shot seed) shared
by the docs in order, one more than ``num_fewshot`` when the shots come from the split under test (the doc
itself is then dropped); ``first_n`` takes the first ones. Each shot is ``doc_to_text + target_delimiter +
target``; shots are joined by ``fewshot_delimiter``, which also ends them; ``description`` comes first.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import TaskConfigError
from harness.taskspec.config import TaskConfig

if TYPE_CHECKING:
    from harness.engine.task_prompts import TaskPrompts

FEWSHOT_SEED = 1234  # lmms-eval's --seed default for few-shot sampling (its fourth value)


class FewShotSampler:
    """The few-shot context for each doc of a task, drawn in doc order as lmms-eval draws it."""

    def __init__(self, config: TaskConfig, prompts: TaskPrompts, docs: list[dict[str, Any]]) -> None:
        if config.fewshot_sampler == "first_n" and config.num_fewshot > len(docs):
            raise TaskConfigError(
                f"task {config.task}: num_fewshot {config.num_fewshot} exceeds the {len(docs)} few-shot docs"
            )
        self.config, self.prompts, self.docs = config, prompts, docs
        self.rnd = random.Random(FEWSHOT_SEED)

    def context(self, doc: dict[str, Any]) -> str:
        """``description`` + the shots for ``doc``, each ended by ``fewshot_delimiter``."""
        config, k = self.config, self.config.num_fewshot
        drawn = k + 1 if config.fewshot_split == config.test_split else k
        drawn_docs = self.docs[:drawn] if config.fewshot_sampler == "first_n" else self.rnd.sample(self.docs, drawn)
        shots = [s for s in drawn_docs if s != doc][:k]
        description = self.prompts.render(config.description, doc) if config.description else ""
        return description + "".join(self._shot(s) + config.fewshot_delimiter for s in shots)

    def _shot(self, doc: dict[str, Any]) -> str:
        target = self.prompts.target(doc)
        if isinstance(target, list):
            answer = str(target[0])
        elif self.config.doc_to_choice is None or isinstance(target, str):
            answer = str(target)
        else:
            answer = self.prompts.choices(doc)[target]
        return self.prompts.text(doc) + self.config.target_delimiter + answer


def fewshot_docs(config: TaskConfig, prompts: TaskPrompts, data_dir: Path | None, test_docs: Any) -> list[Any]:
    """The docs shots are drawn from, chosen as lmms-eval chooses them."""
    from harness.data import load_task_dataset

    split = config.fewshot_split or config.training_split or config.validation_split
    if split is None or split == config.test_split:
        docs = test_docs if config.fewshot_split is None else load_task_dataset(config, data_dir).docs
    else:
        docs = load_task_dataset(dataclasses.replace(config, test_split=split), data_dir).docs
        if config.fewshot_split is None:  # lmms-eval's training/validation docs pass through process_docs
            docs = prompts.process_docs(docs)
    return [docs[i] for i in range(len(docs))]
