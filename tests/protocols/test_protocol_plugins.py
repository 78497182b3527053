"""A third party's protocol plugs in with no change to the harness: a package with its ``Protocol`` (a
builder, an audit command, an after-eval hook with its own eval flag), a task folder passed with
``--include-path``, registered by ``register_protocol`` or by an installed entry point; ``harness build``,
``harness eval`` and ``harness audit`` run it. And the generic layers name no protocol."""

from __future__ import annotations

import argparse
import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

from harness.cli import build_parser, main
from harness.cli.eval import eval_options, eval_settings
from harness.errors import HarnessError
from harness.protocols import base
from tests.conftest import ROOT, write

TOY = """
import argparse
from dataclasses import dataclass
from pathlib import Path

from harness.builder_spec import Builder
from builders.options import option
from harness.protocols.base import Command, EvalOutcome, Protocol

REPO_ID = "toy-org/toy"
SEEN: list[EvalOutcome] = []


@dataclass(frozen=True)
class Options:
    seed: int = option("unused", 0)
    n: int = option("number of images", 4)
    color: str = option("the one color of every image", "red")


def build(out: Path, options: Options) -> Path:
    from datasets import Dataset, DatasetDict, Features, Image, Value
    from PIL import Image as Picture

    rows = {"image": [Picture.new("RGB", (56, 56), options.color) for _ in range(options.n)],
            "color": [options.color] * options.n}
    features = Features({"image": Image(), "color": Value("string")})
    DatasetDict({"test": Dataset.from_dict(rows, features=features)}).save_to_disk(str(out))
    return out


def eval_arguments(group) -> None:
    group.add_argument("--toy-greeting", default="hello")


def after_eval(outcome: EvalOutcome) -> None:
    SEEN.append(outcome)
    for task, records in outcome.samples.items():
        sizes = [len(samples) for samples in records.values()]
        print(f"toy after eval: {outcome.settings.text('toy_greeting')} {task} {sorted(records)} {sizes}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+")


def run_audit(args: argparse.Namespace) -> int:
    from harness.results.schema import read_run

    for run_dir in args.run_dirs:
        run = read_run(Path(run_dir))
        print(f"toy audit: {run_dir}: {sorted(run.results)}")
    return 0


PROTOCOL = Protocol(
    name="toy", title="Toy", summary="a protocol of one color", tasks=("toy_color",), audit_tag="toy",
    builders=(Builder("toy", "toyproto", "one-color squares", inputs="--color NAME"),),
    audit=Command("toy", "count what the runs hold", add_arguments, run_audit),
    after_eval=after_eval, eval_arguments=eval_arguments,
)
"""

TASK = """# toy: name the color of a one-color square
task: toy_color
dataset_path: toy-org/toy
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: "What color is this?"
doc_to_target: color
process_results: !function utils.process_results
metric_list:
  - metric: exact_match
generation_kwargs:
  max_new_tokens: 4
metadata:
  version: 1
  harness_audit: toy
"""

UTILS = """
def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def process_results(doc, results):
    return {"exact_match": float(results[0].strip().lower() == doc["color"])}
"""


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed third-party package: ``toyproto`` with its entry point, and its task folder."""
    site = tmp_path_factory.mktemp("site")
    write(site / "toyproto" / "__init__.py", TOY)
    write(site / "toyproto-0.1.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: toyproto\nVersion: 0.1\n")
    write(site / "toyproto-0.1.dist-info" / "entry_points.txt", "[harness.protocols]\ntoy = toyproto:PROTOCOL\n")
    write(site / "tasks" / "toy.yaml", TASK)
    write(site / "tasks" / "utils.py", UTILS)
    return site


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch, toy_site: Path) -> None:
    """The toy package importable, and a registry this test may change (restored afterwards)."""
    base.protocols()  # the built-ins, loaded once before toyproto is importable (its entry point would leak)
    monkeypatch.syspath_prepend(str(toy_site))
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))


def _build_eval_audit(capsys: pytest.CaptureFixture, site: Path, tmp_path: Path) -> str:
    data = tmp_path / "data"
    assert main(["build", "toy", "--out", str(data / "toy-org" / "toy"), "--color", "blue", "-O", "n=3"]) == 0
    assert (
        main(
            [
                "eval",
                "--model",
                "tiny:qwen2_vl",
                "--tasks",
                "toy_color",
                "--include-path",
                str(site / "tasks"),
                "--data-dir",
                str(data),
                "--output",
                str(tmp_path / "runs"),
                "--no-cache",
                "--verbosity",
                "quiet",
                "--toy-greeting",
                "hi",
            ]
        )
        == 0
    )
    (run_dir,) = [p.parent for p in (tmp_path / "runs").rglob("results.json")]
    assert main(["audit", "toy", str(run_dir)]) == 0
    return capsys.readouterr().out


def test_registered_protocol_builds_evaluates_and_audits(
    capsys: pytest.CaptureFixture, toy_site: Path, tmp_path: Path, fresh_registry: None, data_dir: Path
) -> None:
    toy = importlib.import_module("toyproto")
    base.register_protocol(toy.PROTOCOL)
    toy.SEEN.clear()
    out = _build_eval_audit(capsys, toy_site, tmp_path)
    assert "built toy:" in out
    assert "toy after eval: hi toy_color ['tiny:qwen2_vl'] [3]" in out
    (outcome,) = toy.SEEN
    assert outcome.settings.run.output == tmp_path / "runs" and list(outcome.samples) == ["toy_color"]
    # typed settings, not the command line's Namespace: the models, and the toy's own flag values only
    assert outcome.settings.models == ("tiny:qwen2_vl",) and outcome.settings.flags == {"toy_greeting": "hi"}
    assert "toy audit:" in out and "['toy_color']" in out
    # the builder's options, generated from its Options class; a wrong one is one line naming them
    with pytest.raises(SystemExit):
        main(["build", "toy", "--help"])
    assert "--color COLOR" in capsys.readouterr().out
    assert main(["build", "toy", "--squad", "x"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: option(s) --squad do not apply to the toy builder (its options: --seed, --n, --color)"
    )
    assert base.protocol_of_task("toy_color", _registry(toy_site)) is toy.PROTOCOL


def _registry(site: Path):
    from harness.taskspec.registry import TaskRegistry

    return TaskRegistry.discover([str(site / "tasks")])


def test_entry_point_plugin_is_found(
    capsys: pytest.CaptureFixture, toy_site: Path, tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "_REGISTRY", {})
    monkeypatch.setattr(base, "_loaded", False)  # discovery runs again, now with toyproto installed
    found = base.get_protocol("toy")
    assert found is not None and found is importlib.import_module("toyproto").PROTOCOL
    assert base.get_protocol("fusionaudit") is base.get_protocol("fusion") is not None  # built-ins still there
    assert main(["build", "toy", "--out", str(tmp_path / "toy"), "--n", "1"]) == 0
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    assert "count what the runs hold" in capsys.readouterr().out


PROTOCOL_NAME = re.compile(r"vista|diavlo|stealth|(?<!dif)fusion|mist(?!ake|ral)", re.IGNORECASE)
GENERIC = ("harness/cli", "harness/engine", "harness/taskspec", "harness/results", "harness/models", "harness/report")


def _code_tokens(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every token that is neither a comment nor a docstring."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.add(first.lineno)
    return [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type != tokenize.COMMENT and not (tok.type == tokenize.STRING and tok.start[0] in docstrings)
    ]


@pytest.mark.parametrize("package", GENERIC)
def test_generic_layers_name_no_protocol(package: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, text in _code_tokens(path)
        if PROTOCOL_NAME.search(text)
    ]
    assert not found, "\n".join(found)


def test_a_name_another_protocol_holds_is_refused(fresh_registry: None) -> None:
    with pytest.raises(HarnessError, match="protocol name 'fusionaudit' is taken by 'fusion'"):
        base.register_protocol(base.Protocol(name="fusionaudit", title="x", summary="x"))


def test_eval_settings_hand_a_protocol_its_own_flags_typed(fresh_registry: None) -> None:
    """The eval command's Namespace becomes ``EvalSettings``: the models, the engine's options and only the
    flags the protocol added, a repeatable one's list as a tuple of text and a typed one's value as text."""

    def flags(group: argparse.ArgumentParser) -> None:
        group.add_argument("--toy-name", default="x")
        group.add_argument("--toy-extra", action="append", type=int)
        group.add_argument("--toy-file", type=Path)
        group.add_argument("--toy-dry", action="store_true")

    toy = base.register_protocol(
        base.Protocol(name="toy2", title="t", summary="s", audit_tag="toy2", after_eval=print, eval_arguments=flags)
    )
    argv = ["eval", "--model", "tiny:a", "--model", "tiny:b", "--tasks", "shapes_color", "--verbosity", "quiet"]
    args = build_parser().parse_args([*argv, "--toy-extra", "3", "--toy-extra", "4", "--toy-file", "f.txt"])
    settings = eval_settings(args, eval_options(args), toy)
    assert settings.models == ("tiny:a", "tiny:b") and settings.run.tasks == ["shapes_color"]
    assert settings.run.show_progress is False
    assert settings.flags == {"toy_name": "x", "toy_extra": ("3", "4"), "toy_file": "f.txt", "toy_dry": False}
    assert settings.text("toy_name") == "x"
    with pytest.raises(HarnessError, match=r"^harness eval: the protocol flag 'toy_dry' holds False, not text$"):
        settings.text("toy_dry")
