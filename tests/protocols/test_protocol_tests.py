"""Every test of a protocol sits in its folder, and ``harness protocols NAME`` lists them from there.

A test is of one protocol when everything protocol-specific it touches is that protocol's: the built-in
package ``<pkg>`` (``harness/protocols/<pkg>/``) is named by a test function whose name holds one of the
package's protocol names or aliases as a word (``test_vista_pool_...``), that uses a name imported from
``harness.protocols.<pkg>``, ``builders.<pkg>`` or ``tests.protocols.<pkg>`` (at the top of its module or in the
function), or that takes a fixture named for it (``fusion_dir``). A test that touches exactly one package
belongs in ``tests/protocols/<pkg>/``; one that touches several, or none, is generic. What the check cannot see
(a protocol named only in a string, or reached through a helper function) is left to review. The few tests
that use one protocol as the instance of a generic part say so below, and stay where that part's tests are.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.protocols import ROOT, describe
from harness.protocols import base

PACKAGES = sorted(p.parent.name for p in (ROOT / "harness" / "protocols").glob("*/__init__.py"))
PROTOCOL_MODULES = ("harness.protocols.", "builders.", "tests.protocols.")

SCALE_PLAN = "benchmarks/scale_plan.py, which plans the runs of every protocol"
#: Tests that touch one protocol as the instance of a generic part, by path and function, with the part.
GENERIC = {
    "tests/test_full_disk.py::test_an_audit_report_on_a_full_disk_is_one_line_and_keeps_the_old_report": (
        "an audit report's atomic write (harness/disk.py), VISTA's report as the instance"
    ),
    "tests/leaderboard/test_leaderboard_migrations.py::"
    "test_the_pool_store_reads_stored_files_and_only_its_own_protocols_pools": (
        "the leaderboard's PoolStore; VISTA, the one protocol with a pool, reads it"
    ),
    "tests/test_scale_plan.py::test_vista_projection_by_hand": SCALE_PLAN,
    "tests/test_scale_plan.py::test_fusion_pgd_dominates_its_cost": SCALE_PLAN,
}


def _words(name: str) -> set[str]:
    return set(name.lower().replace("-", "_").split("_"))


def _package_names() -> dict[str, set[str]]:
    """Each built-in package with the words that name it: its own name, its protocols' names and aliases."""
    names = {package: {package} for package in PACKAGES}
    for protocol in base.protocols():
        code = protocol.places.code or ""
        for package in PACKAGES:
            if (code + "/").startswith(f"harness/protocols/{package}/"):
                names[package] |= {word for name in protocol.names for word in _words(name)}
    return names


def _package_of_module(module: str) -> str | None:
    for prefix in PROTOCOL_MODULES:
        if module.startswith(prefix):
            head = module[len(prefix) :].split(".")[0]
            return head if head in PACKAGES else None
    return None


def _imported(nodes: list[ast.stmt] | list[ast.AST]) -> dict[str, str]:
    """The names bound by ``from <protocol module> import ...`` among ``nodes``, to their package."""
    bound = {}
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and (package := _package_of_module(node.module)):
            bound |= {alias.asname or alias.name: package for alias in node.names}
    return bound


def packages_touched(function: ast.FunctionDef, module_imports: dict[str, str], names: dict[str, set[str]]) -> set[str]:
    """The built-in packages a test function touches (the rule in the module docstring)."""
    touched = {package for package, words in names.items() if _words(function.name) & words}
    local = _imported(list(ast.walk(function)))
    touched |= set(local.values())
    used = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    touched |= {package for name, package in module_imports.items() if name in used}
    for arg in function.args.args:
        touched |= {package for package in PACKAGES if package in _words(arg.arg)}
    return touched


def misplaced() -> dict[str, str]:
    """Every test function of one package outside that package's folder: ``path::function`` to the package."""
    names = _package_names()
    found = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        where = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), where)
        module_imports = _imported(tree.body)
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        for function in functions:
            touched = packages_touched(function, module_imports, names)
            if len(touched) == 1 and not where.startswith(f"tests/protocols/{next(iter(touched))}/"):
                found[f"{where}::{function.name}"] = next(iter(touched))
    return found


def test_every_test_of_one_protocol_is_in_its_folder() -> None:
    outside = {test: package for test, package in misplaced().items() if test not in GENERIC}
    assert not outside, f"tests of one protocol outside tests/protocols/<name>/: {outside}"


def test_each_generic_exception_still_touches_one_protocol() -> None:
    """The exceptions above are not stale: each is still a test the rule finds."""
    assert set(GENERIC) <= set(misplaced())


def test_the_rule_finds_a_test_of_one_protocol() -> None:
    """Not vacuous: a function named for a protocol, one using its imported code, one taking its fixture."""
    names = _package_names()
    source = (
        "from harness.protocols.mist.rows import MistRow\n"
        "from harness.protocols.vista import plots\n"
        "def test_fusionaudit_thing(): pass\n"
        "def test_rows(): MistRow.features()\n"
        "def test_two(): MistRow, plots\n"
        "def test_fixture(stealth_dir): pass\n"
        "def test_local():\n    from builders.diavlo.demo import write_sources\n"
        "def test_none(): pass\n"
    )
    tree = ast.parse(source)
    imports = _imported(tree.body)
    touched = {n.name: packages_touched(n, imports, names) for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert touched == {
        "test_fusionaudit_thing": {"fusion"},
        "test_rows": {"mist"},
        "test_two": {"mist", "vista"},
        "test_fixture": {"stealth"},
        "test_local": {"diavlo"},
        "test_none": set(),
    }


def _listed(name: str, capsys: pytest.CaptureFixture) -> list[str]:
    """The test files ``harness protocols NAME`` prints."""
    assert main(["protocols", name]) == 0
    return [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("  test ")]


@pytest.mark.parametrize("name", [p.name for p in base.protocols()])
def test_harness_protocols_name_lists_its_docs_page_and_its_tests(name: str, capsys: pytest.CaptureFixture) -> None:
    protocol = base.get_protocol(name)
    assert protocol is not None and protocol.places.tests and protocol.places.docs
    assert main(["protocols", name]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[: len(describe(protocol))] == describe(protocol)
    assert f"  docs       {protocol.places.docs}" in lines and (ROOT / protocol.places.docs).is_file()
    listed = _listed(name, capsys)
    assert listed, f"{name} lists no test"
    for path in listed:
        assert (ROOT / path).is_file() and Path(path).name.startswith("test_"), path
        assert path.startswith(protocol.places.tests + "/"), f"{path} is outside {protocol.places.tests}"


def test_every_test_file_in_a_protocol_folder_is_listed_by_one_protocol(capsys: pytest.CaptureFixture) -> None:
    listings = [_listed(p.name, capsys) for p in base.protocols()]
    every = [path for listed in listings for path in listed]
    assert len(every) == len(set(every)), "a test file listed by two protocols"
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "protocols").glob("*/**/test_*.py")}
    assert set(every) == on_disk


def test_the_listing_holds_what_the_layout_once_left_out(capsys: pytest.CaptureFixture) -> None:
    assert main(["protocols", "diavlo"]) == 0
    out = capsys.readouterr().out
    for path in (
        "docs/protocols/diavlo.md",
        "tests/protocols/diavlo/test_triplet_parser_linear.py",
        "tests/protocols/diavlo/test_headlines.py",
    ):
        assert path in out


def test_a_protocols_tests_leave_out_a_nested_protocols(capsys: pytest.CaptureFixture) -> None:
    """VISTA's controlled study has its own folder inside VISTA's: each lists its own tests only."""
    assert main(["protocols", "vista"]) == 0
    vista = capsys.readouterr().out
    assert "tests/protocols/vista/test_audit.py" in vista and "tests/protocols/vista/implant/" not in vista
    assert main(["protocols", "vista-implant"]) == 0
    assert "  test       tests/protocols/vista/implant/test_e2e.py" in capsys.readouterr().out.splitlines()


def test_an_alias_names_the_protocol_and_an_unknown_name_is_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main(["protocols", "fusionaudit"]) == 0
    assert capsys.readouterr().out.startswith("fusion (also: fusionaudit): FusionAudit\n")
    assert main(["protocols", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: harness protocols: no protocol 'nope' (known: diavlo,")
