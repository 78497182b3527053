"""Each protocol's declared places (``Protocol.places``) held to the files on disk, both ways, and
``harness protocols``, which prints them.

The files that belong to a built-in protocol package ``harness/protocols/<pkg>/`` (whose protocols are the
registered ones whose code place is that folder or lies in it) are:
- every file under ``harness/protocols/<pkg>/``, ``builders/<pkg>/``, ``tasks/<pkg>/`` and
  ``tests/protocols/<pkg>/``;
- a loose builder module ``builders/<pkg>.py`` or ``builders/<pkg>_*.py`` (there should be none: a
  protocol's builder is a package);
- ``cards/<n>.md``, ``docs/protocols/<n>.md`` and the benchmark scripts ``benchmarks/<n>_*.py``, for ``n`` the
  package's name or a name or alias of one of its protocols.
Each must equal one of the package's protocols' declared places or lie in a declared folder. A benchmark
named otherwise (``triplet_parser.py``) is a protocol's only if it declares it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import harness
from harness.cli import main
from harness.cli.protocols import describe
from harness.protocols import base

ROOT = Path(harness.__file__).resolve().parents[1]
PACKAGES = sorted(p.parent.name for p in (ROOT / "harness" / "protocols").glob("*/__init__.py"))


def _files(folder: Path) -> list[Path]:
    """The files under ``folder`` (none when it is missing), byte-code caches left out."""
    return [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def _of_package(package: str) -> list[base.Protocol]:
    """The registered protocols whose code is the built-in package ``package`` (or a subpackage of it)."""
    code = f"harness/protocols/{package}"
    return [p for p in base.protocols() if p.places.code and (p.places.code + "/").startswith(code + "/")]


def _belongs(package: str, names: set[str]) -> set[str]:
    """The files on disk that belong to the built-in package ``package`` (the rule in the module docstring)."""
    found = [
        *_files(ROOT / "harness" / "protocols" / package),
        *_files(ROOT / "builders" / package),
        *_files(ROOT / "tasks" / package),
        *_files(ROOT / "tests" / "protocols" / package),
        *(ROOT / "builders").glob(f"{package}.py"),
        *(ROOT / "builders").glob(f"{package}_*.py"),
    ]
    for name in names | {package}:
        found += [*(ROOT / "cards").glob(f"{name}.md"), *(ROOT / "benchmarks").glob(f"{name}_*.py")]
        found += (ROOT / "docs" / "protocols").glob(f"{name}.md")
    return {p.relative_to(ROOT).as_posix() for p in found}


def _covered(path: str, places: list[str]) -> bool:
    return any(path == place or path.startswith(place.rstrip("/") + "/") for place in places)


def test_the_built_in_packages_are_found() -> None:
    assert PACKAGES == ["diavlo", "fusion", "mist", "stealth", "vista"]


@pytest.mark.parametrize("protocol", [p.name for p in base.protocols()])
def test_every_declared_place_exists(protocol: str) -> None:
    found = base.get_protocol(protocol)
    assert found is not None
    places = found.places
    assert places.code and places.builder and places.tasks and places.card and places.docs and places.tests, (
        f"{protocol} declares no places"
    )
    for kind, path in places.items():
        assert not path.startswith("/") and ".." not in Path(path).parts, f"{protocol} {kind} {path}: not relative"
        assert (ROOT / path).exists(), f"{protocol} declares {kind} {path}, which is missing"
    assert (ROOT / places.code / "__init__.py").is_file()
    assert places.card == f"cards/{found.card}.md", "the card it declares is the card it names"
    for builder in found.builders:  # what harness build runs lies in the declared builder place
        spec = importlib.util.find_spec(builder.module)
        assert spec is not None and spec.origin is not None
        origin = Path(spec.origin).resolve().relative_to(ROOT).as_posix()
        assert _covered(origin, [places.builder]), f"{builder.module} ({origin}) is outside {places.builder}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_file_of_a_protocol_is_declared(package: str) -> None:
    declared = _of_package(package)
    assert declared, f"no protocol declares harness/protocols/{package} as its code"
    assert any(p.places.builder and Path(p.places.builder).name == package for p in declared)
    assert (ROOT / "builders" / package / "__init__.py").is_file(), "a protocol's builder is a package"
    places = [path for p in declared for _, path in p.places.items()]
    names = {name for p in declared for name in p.names}
    missing = sorted(path for path in _belongs(package, names) if not _covered(path, places))
    assert not missing, f"files of {package} that no protocol of it declares: {missing}"


def test_the_rule_finds_an_undeclared_file() -> None:
    """The coverage check is not vacuous: the rule finds MIST's files, and a place left out uncovers them."""
    belongs = _belongs("mist", {"mist"})
    assert {"builders/mist/builder.py", "builders/mist/demo.py", "cards/mist.md"} <= belongs
    assert "tasks/mist/mist.yaml" in belongs and "tests/protocols/mist/test_metrics.py" in belongs
    assert "docs/protocols/mist.md" in belongs
    assert not _covered("builders/mist/demo.py", ["harness/protocols/mist", "builders/mistral"])
    assert _covered("builders/mist/demo.py", ["builders/mist"])


def test_harness_protocols_prints_each_protocol_and_its_places(capsys: pytest.CaptureFixture) -> None:
    assert main(["protocols"]) == 0
    out = capsys.readouterr().out
    blocks = out.strip().split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == [
        "diavlo: DiaVLo",
        "fusion (also: fusionaudit): FusionAudit",
        "mist: MIST",
        "stealth: Stealth Prompt Testset",
        "vista: VISTA",
        "vista-implant: VISTA controlled study",
    ]
    mist = base.get_protocol("mist")
    assert mist is not None
    assert blocks[2].splitlines() == [
        "mist: MIST",
        f"  {mist.summary}",
        "  code       harness/protocols/mist",
        "  builder    builders/mist",
        "  tasks      tasks/mist",
        "  card       cards/mist.md",
        "  docs       docs/protocols/mist.md",
        "  tests      tests/protocols/mist",
        "  unit       item: the docs sharing item_id (one sentence with its idiomatic phrase, under every "
        "prompting technique and input arm)",
    ]
    assert "  benchmark  benchmarks/triplet_parser.py" in blocks[0].splitlines()


def test_a_protocol_without_places_is_listed_as_such(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A third party's protocol may declare no places; the listing says so rather than printing nothing."""
    base.protocols()  # the built-ins loaded, so the copy below holds them
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    plugin = base.register_protocol(base.Protocol(name="toyplaces", title="Toy", summary="nothing at all"))
    assert plugin.places.items() == []
    assert describe(plugin) == ["toyplaces: Toy", "  nothing at all", "  (no places declared)"]
    assert main(["protocols"]) == 0
    assert "toyplaces: Toy\n  nothing at all\n  (no places declared)\n\nvista:" in capsys.readouterr().out
