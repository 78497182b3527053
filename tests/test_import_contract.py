"""The layer contract (``[tool.importlinter]`` in pyproject.toml) holds on the real import graph, covers every
top-level part of ``harness``, and fails on an upward import: the check CI runs is shown to catch one."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import grimp
from packaging.requirements import Requirement

from tests.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
FIRST_PARTY = ("harness", "builders")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the packages under ``tree`` (its own copy of harness and builders come first)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def layer_modules() -> set[str]:
    """Every module the layers contract places."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["id"] == "layers"]
    return {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}


def test_every_top_level_part_of_harness_has_a_layer() -> None:
    """A new top-level module or package must be placed in the contract, so none is left unchecked."""
    parts = {
        f"harness.{p.stem if p.suffix == '.py' else p.name}"
        for p in (ROOT / "harness").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert parts - layer_modules() == set()
    assert layer_modules() - parts - {"builders"} == set()


def test_the_contract_holds_and_an_upward_import_breaks_it(tmp_path: Path) -> None:
    """The tree as committed keeps every contract; the same tree with the engine importing the CLI does not,
    and the report names the offending import."""
    for part in ("harness", "builders"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "broken" not in kept.stdout.lower().replace("0 broken", "")

    requests = tmp_path / "harness" / "engine" / "requests.py"
    requests.write_text(
        requests.read_text() + "\n\ndef _upward() -> None:\n    import harness.cli.eval  # noqa: F401\n"
    )
    broken = lint_imports(tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "harness.engine is not allowed to import harness.cli" in broken.stdout
    assert "harness.engine.requests -> harness.cli.eval" in broken.stdout


def local_imports(root: Path) -> list[tuple[str, int, str]]:
    """(module, line, imported module) for every ``from harness|builders... import`` inside a function: the
    module named, and each imported name that is itself a module (``from builders.stealth import render``)."""
    found = []
    for path in sorted([*(root / "harness").rglob("*.py"), *(root / "builders").rglob("*.py")]):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in FIRST_PARTY:
                    found += [(module, node.lineno, f"{node.module}.{a.name}") for a in node.names]
                    found.append((module, node.lineno, node.module))
    return found


def test_no_function_local_import_hides_a_cycle() -> None:
    """A function-local import of the project's own code is there to keep a command's load light (the CLI
    imports a command's engine only when it runs), never to dodge a cycle: none of them points at a module
    that imports, directly or not, the module it is in."""
    graph = grimp.build_graph(*FIRST_PARTY, include_external_packages=False)
    hiding = [
        f"{module}:{line} imports {imported}, which imports {module} back"
        for module, line, imported in local_imports(ROOT)
        if imported in graph.modules
        and not module.startswith(imported + ".")  # a package's __init__ is run before its submodules anyway
        and graph.find_shortest_chain(importer=imported, imported=module)
    ]
    assert hiding == []


def extra_only_packages() -> dict[str, set[str]]:
    """Import name -> the extras that bring it, for every distribution only an extra installs (neither a core
    dependency nor one of theirs)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def norm(name: str) -> str:
        return name.lower().replace("_", "-")

    core: set[str] = set()
    todo = [Requirement(r) for r in project["dependencies"]]
    while todo:
        req = todo.pop()
        if norm(req.name) in core or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        core.add(norm(req.name))
        try:
            todo += [Requirement(r) for r in metadata.requires(req.name) or []]
        except metadata.PackageNotFoundError:
            continue
    extras: dict[str, set[str]] = {}
    for extra, reqs in project["optional-dependencies"].items():
        if extra in ("test", "dev"):  # the contributors' tools, not a user's extra
            continue
        for req in map(Requirement, reqs):
            if norm(req.name) not in core and norm(req.name) != norm(project["name"]):
                extras.setdefault(norm(req.name), set()).add(extra)
    return {
        module: set().union(*(extras[norm(d)] for d in dists if norm(d) in extras))
        for module, dists in metadata.packages_distributions().items()
        if any(norm(d) in extras for d in dists) and not any(norm(d) in core for d in dists)
    }


def _block_above(lines: list[str], index: int) -> str:
    """The import lines just above ``lines[index]`` and the line before them: one comment serves a block."""
    start = index
    while start > 0 and lines[start - 1].lstrip().startswith(("import ", "from ")):
        start -= 1
    return " ".join(lines[max(start - 1, 0) : index])


def test_function_local_imports_of_an_extra_name_it() -> None:
    """A package only an extra installs is imported inside the function that needs it, and the import (or its
    import block) names the extra, ``[vista]``: the reader sees why the import is local and what to install."""
    extras = extra_only_packages()
    assert extras["peft"] == {"vista"} and "torch" not in extras  # the reading of pyproject.toml works
    unnamed = []
    for path in sorted([*(ROOT / "harness").rglob("*.py"), *(ROOT / "builders").rglob("*.py")]):
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                    module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                    wanted = extras.get((module or "").split(".")[0], set())
                    near = lines[node.lineno - 1] + " " + _block_above(lines, node.lineno - 1)
                    if wanted and not any(f"[{extra}]" in near for extra in wanted):
                        unnamed.append(f"{path.relative_to(ROOT)}:{node.lineno} {module} ({', '.join(sorted(wanted))})")
    assert unnamed == []
