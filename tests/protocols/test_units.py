"""Each protocol declares its unit once (``Protocol.unit``): what its intervals resample and what a task's
metrics cluster by, named by a column its docs really have."""

from __future__ import annotations

import dataclasses

from harness.protocols.base import Unit, get_protocol, protocols, unit_of_task
from harness.protocols.diavlo.rows import DiavloRow
from harness.protocols.fusion.rows import FusionRow
from harness.protocols.mist.rows import MistJudgeDoc
from harness.protocols.rows import Row
from harness.protocols.stealth.rows import StealthRow
from harness.protocols.vista.rows import VistaRow
from harness.taskspec.registry import TaskRegistry

# the protocol, its unit's name, and the Row of the docs its tasks score (MIST's judge task expands items)
DECLARED: dict[str, tuple[str, type[Row]]] = {
    "vista": ("query", VistaRow),
    "stealth": ("sentence", StealthRow),
    "mist": ("item", MistJudgeDoc),
    "diavlo": ("question", DiavloRow),
    "fusion": ("clean-correct item", FusionRow),
}


def test_each_protocol_declares_its_unit_by_a_column_of_its_docs() -> None:
    for name, (unit, row) in DECLARED.items():
        protocol = get_protocol(name)
        assert protocol is not None and isinstance(protocol.unit, Unit), name
        assert protocol.unit.name == unit and protocol.unit.description
        assert protocol.unit.column in {f.name for f in dataclasses.fields(row)}, name
    built_in = {p.name for p in protocols() if (p.places.code or "").startswith("harness/protocols/") and p.unit}
    assert built_in == set(DECLARED)


def test_a_task_finds_its_protocols_unit() -> None:
    registry = TaskRegistry.discover()
    unit = unit_of_task("mist", registry)
    assert unit is not None and (unit.name, unit.column) == ("item", "item_id")
    stealth = unit_of_task("stealth_vqa", registry)
    assert stealth is not None and stealth.column == "sample_id"
    assert unit_of_task("shapes_color", registry) is None  # a task of no protocol: each doc its own unit


def test_every_task_of_a_protocol_clusters_by_its_unit() -> None:
    """The task YAML names the unit as lmms-eval's ``cluster_key`` (so both tools cluster by it), and it is
    the protocol's declared column: one unit, read by the engine's intervals and by lmms-eval alike."""
    registry = TaskRegistry.discover()
    for name in DECLARED:
        protocol = get_protocol(name)
        assert protocol is not None and protocol.unit is not None
        tasks = [t for t in registry.expand(list(protocol.tasks)) if unit_of_task(t, registry) == protocol.unit]
        assert tasks, name
        for task in tasks:
            assert registry.get(task).cluster_key == protocol.unit.column, (name, task)
