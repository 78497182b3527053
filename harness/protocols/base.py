"""The protocol plug-in contract.

A protocol (VISTA, Stealth, MIST, DiaVLo, FusionAudit, or a third party's) is a ``Protocol`` value that
declares its places (``ProtocolPlaces``: its code, builder, tasks, card, tests and benchmarks) and the
hooks the generic layers call: ``harness build`` (its builders), ``harness audit <name>`` (its cross-run
audit, and the typed audit.json it writes: ``audit_report``, read back by ``Protocol.read_audit``),
further top-level commands (``harness attack``), a hook after ``harness eval`` has run every model, and
its leaderboard figures. The generic modules (engine, CLI, leaderboard, task loading, results) iterate
over the registry and never name a protocol.

Built-in protocols are the packages ``harness/protocols/<name>/`` that define ``PROTOCOL``; third-party
ones register through the entry-point group ``harness.protocols`` (each entry point names a ``Protocol``)
or by calling ``register_protocol``. A protocol's builders are ``builders.Builder`` values naming a module
with ``REPO_ID``, ``Options`` and ``build`` (see :mod:`builders`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.builder_spec import Builder
    from harness.engine.runner import EvalOptions
    from harness.protocols.audit_report import AuditReport
    from harness.taskspec.config import TaskConfig
    from harness.taskspec.registry import TaskRegistry

from harness.errors import HarnessError, TaskConfigError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "harness.protocols"


@dataclass(frozen=True)
class Command:
    """A command-line subcommand: its arguments are declared once, and ``run`` returns the exit code."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


#: The value of one flag a protocol's ``eval_arguments`` added, as parsed (a repeatable one's: a tuple).
FlagValue = str | int | float | bool | tuple[str, ...] | None


@dataclass(frozen=True)
class EvalSettings:
    """What ``harness eval`` hands a protocol's eval hooks, typed: the model specs it runs, the run's
    settings, and the values of the flags the protocol's ``eval_arguments`` added, by their ``dest``."""

    models: tuple[str, ...]
    run: EvalOptions
    flags: Mapping[str, FlagValue] = field(default_factory=dict)

    def text(self, dest: str) -> str:
        """The protocol's flag ``dest`` as text: what a flag without a ``type`` holds."""
        value = self.flags.get(dest)
        if not isinstance(value, str):
            raise HarnessError(f"harness eval: the protocol flag {dest!r} holds {value!r}, not text")
        return value


@dataclass(frozen=True)
class EvalOutcome:
    """What ``harness eval`` hands a protocol's after-eval hook: each task's samples per model spec."""

    samples: Mapping[str, Mapping[str, Sequence[Any]]]  # task -> model spec -> sample records
    settings: EvalSettings


@dataclass(frozen=True)
class ProtocolPlaces:
    """Where a protocol's files are, as POSIX paths relative to the repository root (a folder or one file).

    Declared so that ``harness protocols`` can list them and a test can hold them to the files on disk, both
    ways (tests/protocols/test_protocol_places.py, which also states which files count as a protocol's). A
    third-party protocol may leave every place empty.
    """

    code: str | None = None  # its code package: harness/protocols/<name>/
    builder: str | None = None  # its builder package: builders/<name>/
    tasks: str | None = None  # its lmms-eval tasks: tasks/<name>/
    card: str | None = None  # its dataset card: cards/<card>.md
    docs: str | None = None  # its documentation page: docs/protocols/<name>.md
    tests: str | None = None  # its tests: tests/protocols/<name>/, every test of the protocol and no other's
    benchmarks: tuple[str, ...] = ()  # its scripts in benchmarks/

    @classmethod
    def standard(cls, name: str, card: str | None = None, benchmarks: tuple[str, ...] = ()) -> ProtocolPlaces:
        """The places of a protocol laid out as the built-ins are: every folder named ``name``, its card
        ``cards/<card>.md`` (``card`` defaults to ``name``), its page ``docs/protocols/<name>.md`` and
        ``benchmarks/<script>`` for each benchmark."""
        return cls(
            code=f"harness/protocols/{name}",
            builder=f"builders/{name}",
            tasks=f"tasks/{name}",
            card=f"cards/{card or name}.md",
            docs=f"docs/protocols/{name}.md",
            tests=f"tests/protocols/{name}",
            benchmarks=tuple(f"benchmarks/{script}" for script in benchmarks),
        )

    def items(self) -> list[tuple[str, str]]:
        """Each declared place as (kind, path), in the order above, the empty ones left out."""
        single = {
            "code": self.code,
            "builder": self.builder,
            "tasks": self.tasks,
            "card": self.card,
            "docs": self.docs,
            "tests": self.tests,
        }
        return [(kind, path) for kind, path in single.items() if path] + [("benchmark", b) for b in self.benchmarks]


def protocol_tests(protocol: Protocol, root: Path) -> list[str]:
    """The test files of ``protocol`` under ``root`` (a checkout): every ``test_*.py`` in its tests place, but
    those in another protocol's tests place nested inside it (VISTA's controlled study in VISTA's folder), as
    sorted POSIX paths relative to ``root``. Read from the layout, so a test file added there is listed."""
    place = protocol.places.tests
    if place is None:
        return []
    nested = [
        other.places.tests
        for other in protocols()
        if other.places.tests and other.places.tests.startswith(place.rstrip("/") + "/")
    ]
    folder = root / place
    found = [folder] if folder.is_file() else sorted(folder.rglob("test_*.py"))
    paths = [p.relative_to(root).as_posix() for p in found]
    return [p for p in paths if not any(p.startswith(n.rstrip("/") + "/") for n in nested)]


@dataclass(frozen=True)
class Unit:
    """What a protocol's figures count and resample: one query, sentence, item or question, with every doc
    (condition, arm, repeat) that belongs to it. ``column`` is the doc column whose value identifies the unit,
    so docs with the same value are one unit: the audits bootstrap over units, and the engine clusters a
    task's metrics by ``doc[column]`` (:func:`unit_of_task`)."""

    name: str  # singular, as intervals print it: "95% CI, cluster_bootstrap over 200 items"
    column: str  # the doc column identifying the unit
    description: str  # one line: what one unit is


@dataclass(frozen=True)
class Protocol:
    """One audit protocol and its hooks; every hook is optional."""

    name: str
    title: str
    summary: str  # one line: what it measures (shown in listings and on the leaderboard)
    aliases: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()  # task, group or tag names whose member tasks are this protocol's
    builders: tuple[Builder, ...] = ()  # what ``harness build`` offers (builders/<name>/)
    card: str | None = None  # cards/<card>.md
    extra: str | None = None  # the pip extra its optional parts need
    audit: Command | None = None  # ``harness audit <name>``
    audit_report: type[AuditReport] | None = None  # what its audit writes as audit.json
    commands: tuple[Command, ...] = ()  # further top-level commands (e.g. ``harness attack``)
    after_eval: Callable[[EvalOutcome], None] | None = None  # once, after every model of a run
    audit_tag: str | None = None  # tasks whose metadata says ``harness_audit: <tag>`` feed after_eval
    eval_arguments: Callable[[argparse.ArgumentParser], None] | None = None  # after_eval's ``harness eval`` flags
    # before any model runs: refuses (HarnessError) what after_eval would fail on, given the eval's settings
    # (its models and flags), so a bad audit flag costs seconds, not a whole run
    check_eval: Callable[[EvalSettings], None] | None = None
    extensions: Mapping[str, Any] = field(default_factory=dict)  # hooks of other layers (e.g. "leaderboard")
    places: ProtocolPlaces = field(default_factory=ProtocolPlaces)  # its files, for listings and checks
    unit: Unit | None = None  # what its intervals resample; None: each doc is its own unit

    @property
    def names(self) -> tuple[str, ...]:
        """The protocol's name and its aliases: the names it is found by, which no other protocol may hold."""
        return (self.name, *self.aliases)

    def read_audit(self, path: Path) -> AuditReport:
        """This protocol's audit report in ``path`` (an audit.json or its folder), of any readable version."""
        if self.audit_report is None:
            raise HarnessError(f"protocol {self.name!r} declares no audit report")
        return self.audit_report.read(path)


_REGISTRY: dict[str, Protocol] = {}
_loaded = False


def register_protocol(protocol: Protocol) -> Protocol:
    """Add a protocol (replacing one of the same name); a name or alias another protocol holds is refused."""
    for held in _REGISTRY.values():
        taken = sorted(set(held.names) & set(protocol.names))
        if taken and held.name != protocol.name:
            raise HarnessError(f"protocol name {taken[0]!r} is taken by {held.name!r}")
    _REGISTRY[protocol.name] = protocol
    return protocol


def _load() -> None:
    """Import the built-in protocol packages and the installed plug-ins, once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from importlib.metadata import entry_points

    import harness.protocols as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            if isinstance(getattr(module, "PROTOCOL", None), Protocol):
                register_protocol(module.PROTOCOL)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:  # a broken plug-in must not take the harness down
            found = entry.load()
            if not isinstance(found, Protocol):
                raise HarnessError("it is not a harness.protocols.base.Protocol")
            register_protocol(found)
        except Exception as exc:
            log.warning("protocol plug-in %s cannot be loaded: %s", entry.name, exc)


def protocols() -> list[Protocol]:
    """Every registered protocol, by name."""
    _load()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def get_protocol(name: str) -> Protocol | None:
    """The protocol called ``name`` or one of its aliases, else None."""
    return next((p for p in protocols() if name in p.names), None)


def audit_tags() -> list[str]:
    """The values a task's ``harness_audit`` may take: each registered protocol's audit tag."""
    return sorted({p.audit_tag for p in protocols() if p.audit_tag is not None})


def check_audit_tag(config: TaskConfig) -> None:
    """Refuses a task whose ``harness_audit`` names no registered protocol's tag. Checked where tasks are
    validated for a run or a listing, not when a config is read, so reading one loads no protocol."""
    if config.harness_audit is not None and config.harness_audit not in audit_tags():
        raise TaskConfigError(
            f"{config.source}: metadata harness_audit {config.harness_audit!r} is unknown "
            f"(known: {', '.join(audit_tags())})"
        )


def unit_of_task(task: str, registry: TaskRegistry) -> Unit | None:
    """The unit of the protocol ``task`` belongs to (its docs sharing ``doc[unit.column]`` are one cluster),
    or None for a task of no protocol, or of one that declares no unit (each doc its own unit)."""
    protocol = protocol_of_task(task, registry)
    return protocol.unit if protocol is not None else None


def protocol_of_task(task: str, registry: TaskRegistry) -> Protocol | None:
    """The protocol whose task, group or tag names cover ``task``; None for a task of no protocol."""
    for protocol in protocols():
        for name in protocol.tasks:
            try:
                if task in registry.expand([name]):
                    return protocol
            except TaskConfigError:  # a name whose tasks are not installed here
                continue
    return None
