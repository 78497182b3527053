"""ARCHITECTURE.md's claims that can be read mechanically, held to the code: the layer diagram is the contract
in pyproject.toml, each file the homes table names is where it says, each type of the seams table is found
where it says, the protocol plug-in table names every field of ``Protocol`` and no other, and ``tests/``
mirrors the package. The paths and test names the project's pages cite exist.

The claims that need judgement (a module holds what its row says; "the one way" to do a thing is the only
way) are left to review; the layer contract itself is lint-imports' (tests/test_import_contract.py)."""

from __future__ import annotations

import dataclasses
import importlib
import re
import tomllib
from pathlib import Path

import pytest

from harness.cli import build_parser
from harness.protocols.base import Protocol
from tests.conftest import ROOT

ARCHITECTURE = (ROOT / "ARCHITECTURE.md").read_text()
#: The pages whose citations of files and tests are checked.
PAGES = [
    "ARCHITECTURE.md",
    "CONTRIBUTING.md",
    "README.md",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")),
]
#: The pages that cite test functions by name (the others name lmms-eval's keys, ``test_split``, in backticks).
CITE_TESTS = {"ARCHITECTURE.md", "CONTRIBUTING.md"}
#: Where a cited path may start: the folders of the repository.
ROOTS = ("harness/", "builders/", "tasks/", "tests/", "cards/", "docs/", "scripts/", "benchmarks/", ".ci/")
PLACEHOLDER = re.compile(r"[<*{]|\.\.\.")


def _section(title: str) -> str:
    """The text of ARCHITECTURE.md's section ``## title``, up to the next one."""
    start = ARCHITECTURE.index(f"\n## {title}\n")
    end = ARCHITECTURE.find("\n## ", start + 1)
    return ARCHITECTURE[start : end if end != -1 else None]


def _table(title: str) -> list[list[str]]:
    """The rows of the first table of a section, cells stripped (the header and rule left out)."""
    lines = [line for line in _section(title).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines[2:]]


def _code(text: str) -> list[str]:
    """Each backticked span of ``text``."""
    return re.findall(r"`([^`]+)`", text)


def test_the_layer_diagram_is_the_contract() -> None:
    """The diagram's layers, top down (``:`` beside one another, ``over`` one below the other in the foundation
    line), equal the ``layers`` contract of pyproject.toml; the two protocol lines are the one layer
    ``harness.protocols`` (their own contract keeps them apart)."""
    block = _section("The layers (enforced)").split("```")[1].strip()
    layered, foundation = block.split("\nfoundation")
    groups: list[list[str]] = []
    for line in layered.splitlines():
        head = re.split(r"\s{2,}", line.strip())[0]
        if line.startswith("  :"):  # beside the layer above
            groups[-1].append(head.lstrip(": "))
        elif not line.startswith(" "):  # a line that starts a layer (others continue its description)
            names = [re.sub(r"^harness\.protocols\..*", "harness.protocols", n.strip()) for n in head.split(":")]
            if not groups or groups[-1] != names:
                groups.append(names)
    words = " ".join(foundation.split())
    groups += [[f"harness.{n.strip()}" for n in part.split(":")] for part in words.split(" over ")]
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contract if c["id"] == "layers"]
    assert groups == [[n.strip() for n in layer.split(":")] for layer in layers]


def test_each_file_the_homes_table_names_is_there() -> None:
    """A ``name.py`` (or ``folder/``) in a row's last column lies in the row's folder; a row of the built-in
    protocols' folder (``<name>``) is checked in each of them that has the file."""
    missing = []
    for _, where, what in _table("Homes"):
        (place,) = _code(where)
        folder = ROOT / place.split("*")[0] if place.endswith("/") or "*" in place else (ROOT / place).parent
        for name in _code(what):
            if not re.fullmatch(r"[a-z_]+(\.py|/)", name):
                continue
            if "<name>" in place:
                packages = sorted((ROOT / place.split("<name>")[0]).glob("*/__init__.py"))
                if not any((p.parent / name).exists() for p in packages):
                    missing.append(f"{place}{name}")
            elif not (folder / name).exists():
                missing.append(f"{place} {name}")
    assert not missing, f"named in ARCHITECTURE.md's homes but not there: {missing}"


def test_the_command_line_row_names_every_command_module() -> None:
    """Each command of the row is a subcommand of ``harness`` with its module in harness/cli/."""
    (row,) = [what for layer, _, what in _table("Homes") if layer == "command line"]
    listed = row[row.index("one thin module per command (") :].split(")")[0]
    commands = _code(listed)
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.choices and "eval" in a.choices]  # the subcommands
    assert commands and set(commands) <= set(sub.choices)
    assert all((ROOT / "harness" / "cli" / f"{command}.py").is_file() for command in commands)


def test_each_type_of_the_seams_table_is_found_where_it_says() -> None:
    """Every capitalised name a row's type column gives (``GenerationRequest(key, ...)`` gives
    ``GenerationRequest``) is an attribute of one of the modules its where column names."""
    missing = []
    for seam, types, where in _table("Typed values at the seams"):
        files: list[str] = []
        for path in re.findall(r"[\w/]+\.py", where):  # a bare name is in the folder of the path before it
            files.append(path if "/" in path or not files else f"{files[-1].rsplit('/', 1)[0]}/{path}")
        modules = [f[: -len(".py")].replace("/", ".") for f in files if (ROOT / f).is_file()]
        if not modules:  # a row whose home is each protocol's (``<name>``) or the owning module
            continue
        loaded = [importlib.import_module(m) for m in modules]
        for span in _code(types):
            name = re.match(r"[A-Z]\w*", span)
            if (
                name
                and name.group() not in {"Literal", "Namespace"}
                and not any(hasattr(m, name.group()) for m in loaded)
            ):
                missing.append(f"{seam}: {name.group()} in {modules}")
    assert not missing, f"types of ARCHITECTURE.md's seams not where it says: {missing}"


def test_the_plug_in_table_names_every_field_of_a_protocol() -> None:
    """The protocol plug-in contract's first column names the fields of ``Protocol``, every one and no other."""
    named = {re.sub(r"\[.*", "", name) for first, _ in _table("The protocol plug-in contract") for name in _code(first)}
    assert named == {f.name for f in dataclasses.fields(Protocol)}


def _test_dirs() -> list[Path]:
    """Every folder of tests/ that holds Python, the golden runs' data left out."""
    return sorted(
        p.parent
        for p in (ROOT / "tests").rglob("*.py")
        if "__pycache__" not in p.parts and "golden" not in p.relative_to(ROOT / "tests").parts[:1]
    )


def test_tests_mirror_the_package() -> None:
    """Each folder of tests/ is a package, and mirrors one of the project: ``tests/<part>/`` a part of
    ``harness`` (``tests/protocols/<name>/`` a protocol's, ``tests/builders/`` ``builders/``)."""
    for folder in {*_test_dirs(), ROOT / "tests" / "golden"}:
        assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} is no package"
    for folder in set(_test_dirs()) - {ROOT / "tests"}:
        parts = folder.relative_to(ROOT / "tests").parts
        mirror = ROOT / "builders" / Path(*parts[1:]) if parts[0] == "builders" else ROOT / "harness" / Path(*parts)
        assert mirror.is_dir(), f"tests/{'/'.join(parts)} mirrors nothing ({mirror.relative_to(ROOT)} is missing)"


def test_no_test_of_a_part_is_left_at_the_top() -> None:
    """A test named for a part of ``harness`` (``test_<part>.py``, ``test_<part>_*.py``) is in ``tests/<part>/``:
    the top of tests/ holds the tests of harness's single modules and those that cross the parts."""
    parts = {p.parent.name for p in (ROOT / "harness").glob("*/__init__.py")} | {"builders", "protocol"}
    stray = [
        p.name
        for p in (ROOT / "tests").glob("test_*.py")
        if p.stem[len("test_") :].split("_")[0] in parts or p.stem[len("test_") :] in parts
    ]
    assert not stray, f"tests of a part of harness at the top of tests/: {stray}"


@pytest.mark.parametrize("page", PAGES)
def test_the_files_and_tests_a_page_cites_exist(page: str) -> None:
    """Every path a page cites (in backticks or as a link, from a folder of the repository, no placeholder)
    exists; every test file it names (``test_x.py``) is one of tests/, and every test function it names is
    defined there."""
    text = re.sub(r"```.*?```", "", (ROOT / page).read_text(), flags=re.S)  # fenced blocks: commands, diagrams
    cited = [*_code(text), *re.findall(r"\]\(([^)#\s]+)", text)]  # backticked spans and link targets
    spans = [s.split()[0].split("::")[0].rstrip(".,") for s in cited if s.split()]
    paths = [s for s in spans if s.startswith(ROOTS) and not PLACEHOLDER.search(s)]
    missing = [p for p in paths if not (ROOT / p).exists()]
    test_files = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    missing += [s for s in spans if re.fullmatch(r"test_\w+\.py", s) and s not in test_files]
    if page in CITE_TESTS:
        sources = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))
        functions = set(re.findall(r"^def (test_\w+)", sources, re.M))
        missing += [s for s in spans if re.fullmatch(r"test_\w+", s) and s not in functions]
    assert not missing, f"{page} cites what is not there: {missing}"
