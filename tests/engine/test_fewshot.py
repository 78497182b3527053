"""Few-shot prompts in lmms-eval's format: shots ``doc_to_text + target_delimiter + target`` joined and ended
by ``fewshot_delimiter``, drawn by the configured sampler; bad settings refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.engine.tasks import open_task
from harness.errors import TaskConfigError
from harness.taskspec.config import TaskConfig
from harness.taskspec.registry import TaskRegistry
from tests.conftest import write
from tests.engine.test_loglikelihood import arc_task

SKY = "Question: What color is the sky?\nAnswer:"
SHAPE = "Question: Which one is a shape?\nAnswer:"
DOG = "Question: How many legs has a dog?\nAnswer:"


def _prompts(tasks: Path, extra: str) -> list[str]:
    write(tasks / "arc_tiny.yaml", (tasks / "arc_tiny.yaml").read_text() + extra)
    opened = open_task("arc_tiny", None, registry=TaskRegistry.discover([tasks]))
    return [opened.prompts.build_messages(opened.docs[i])[0].text for i in range(3)]


def test_first_n_shots_from_the_test_split_skip_the_doc_itself(tmp_path: Path) -> None:
    prompts = _prompts(
        arc_task(tmp_path),
        'num_fewshot: 1\nfewshot_split: test\nfewshot_config:\n  sampler: first_n\ndescription: "Answer.\\n"\n',
    )
    # the description is a Jinja2 template; rendering drops its trailing newline, as in lmms-eval
    assert prompts == [
        f"Answer.{SHAPE} circle\n\n{SKY}",
        f"Answer.{SKY} blue\n\n{SHAPE}",
        f"Answer.{SKY} blue\n\n{DOG}",
    ]


def test_default_sampler_draws_with_one_seeded_generator_in_doc_order(tmp_path: Path) -> None:
    # random.Random(1234).sample over 3 docs, 2 draws each (one more than num_fewshot: the test split):
    # [1, 0], then [0, 2], then [2, 0] -> doc 0 gets doc 1; doc 1 gets doc 0; doc 2 gets doc 2 dropped: doc 0.
    prompts = _prompts(arc_task(tmp_path), 'num_fewshot: 1\nfewshot_split: test\nfewshot_delimiter: "\\n###\\n"\n')
    assert prompts == [f"{SHAPE} circle\n###\n{SKY}", f"{SKY} blue\n###\n{SHAPE}", f"{SKY} blue\n###\n{DOG}"]


def test_bad_fewshot_settings_are_one_line(tmp_path: Path) -> None:
    base = {"task": "t", "doc_to_text": "q"}
    for extra, message in [
        ({"num_fewshot": -1}, "num_fewshot must be a whole number"),
        ({"num_fewshot": 1, "fewshot_config": {"sampler": "balanced"}}, "sampler 'balanced'"),
        ({"fewshot_delimiter": 1}, "fewshot_delimiter must be a string"),
    ]:
        with pytest.raises(TaskConfigError, match=message):
            TaskConfig.from_dict({**base, **extra}, tmp_path / "t.yaml")
