"""The generic layers load no code from the layers above them, checked on the real imports.

Each probe runs in a fresh interpreter (``python -c``) and reports which ``harness`` modules the import left in
``sys.modules``, so modules another test already loaded cannot hide a leak.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

#: Modules of the layers above ``harness.metrics``: the protocols, the CLI and the leaderboard.
UPPER = ("harness.protocols", "harness.cli", "harness.leaderboard")
METRIC_MODULES = sorted(
    f"harness.metrics.{p.stem}" for p in (ROOT / "harness" / "metrics").glob("*.py") if p.stem != "__init__"
)
TASK_FOLDERS = sorted(p.name for p in (ROOT / "tasks").iterdir() if any(p.glob("*.yaml")))
PROTOCOLS = sorted(p.name for p in (ROOT / "harness" / "protocols").iterdir() if (p / "__init__.py").is_file())


def loaded_after(code: str) -> list[str]:
    """The ``harness`` modules in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('harness'))))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_probe_sees_upper_layer_modules() -> None:
    """A module that does load the CLI is reported, so an empty report below means no leak."""
    assert "harness.cli.eval" in loaded_after("import harness.cli.eval")


@pytest.mark.parametrize("module", METRIC_MODULES)
def test_metric_modules_load_no_protocol_cli_or_leaderboard(module: str) -> None:
    assert "harness.metrics.bootstrap" in METRIC_MODULES
    assert [m for m in loaded_after(f"import {module}") if m.startswith(UPPER)] == []


@pytest.mark.parametrize("folder", TASK_FOLDERS)
def test_reading_a_bundled_task_config_loads_no_other_protocol(folder: str) -> None:
    """Each task of ``tasks/<folder>/``, read the way ``harness tasks`` and ``harness eval`` read one (the
    registry's discover and get), loads neither the CLI, the leaderboard nor a protocol but its own."""
    code = (
        "from harness.taskspec.registry import TaskRegistry\n"
        "registry = TaskRegistry.discover()\n"
        f"names = [n for n in registry.tasks if registry.get(n).source.parent.name == {folder!r}]\n"
        "assert names, 'no task read'\n"
    )
    allowed = ("harness.protocols", "harness.protocols.base", f"harness.protocols.{folder}")
    leaked = [
        m
        for m in loaded_after(code)
        if m.startswith(UPPER) and m not in allowed and not m.startswith(f"harness.protocols.{folder}.")
    ]
    assert leaked == []
    assert set(TASK_FOLDERS) - {"shapes"} <= set(PROTOCOLS)  # every other task folder is named for its protocol
