"""A missing optional dependency ends in one line naming the extra that installs it, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Runs the CLI with the named top-level modules made unimportable, as if their extra were not installed.
BLOCKED_RUN = """
import sys
blocked = set(sys.argv[1].split(","))
class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
for name in list(sys.modules):
    if name.split(".")[0] in blocked:
        del sys.modules[name]
sys.meta_path.insert(0, Blocker())
from harness.cli import main
sys.exit(main(sys.argv[2:]))
"""


def run_without(modules: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, modules, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    ("modules", "argv", "extra"),
    [
        (
            "diffusers",
            ["build", "vista", "--generator", "tiny:sdxl_turbo", "--topics", "ai", "--out", "{tmp}"],
            "vista",
        ),
        ("sqlalchemy", ["leaderboard", "token", "list", "--db", "sqlite:///unused.sqlite"], "leaderboard"),
        (
            "openai",
            ["eval", "--model", "openai:m", "--model-args", "base_url=http://127.0.0.1:9", "--tasks", "shapes"],
            "openai",
        ),
    ],
)
def test_missing_extra_is_one_line(modules: str, argv: list[str], extra: str, tmp_path: Path, data_dir: Path) -> None:
    done = run_without(modules, *(a.format(tmp=tmp_path) for a in argv))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("building ")]  # its status
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ") and "pip install" in lines[0] and f"[{extra}]" in lines[0]


def test_require_names_the_extra_and_keeps_other_errors() -> None:
    from harness.errors import HarnessError
    from harness.extras import missing_extra, require

    with pytest.raises(HarnessError, match=r"the thing needs no_such_module_xyz, .*\[vista\]"):
        require("no_such_module_xyz", "vista", "the thing")
    assert require("json", "vista", "parsing").loads("1") == 1
    assert missing_extra(ModuleNotFoundError("x", name="not_optional")) is None
    assert "[diavlo]" in str(missing_extra(ModuleNotFoundError("x", name="sklearn.ensemble")))
