"""``harness protocols [NAME]``: every registered protocol with its names, what it measures, its declared places
and its unit; with a NAME, that protocol alone and every test file of it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import harness
from harness.errors import HarnessError
from harness.protocols.base import Protocol, get_protocol, protocol_tests, protocols

#: The checkout the places are relative to (a wheel holds no tests: its listing has none).
ROOT = Path(harness.__file__).resolve().parent.parent


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness protocols [NAME]``."""
    ps = sub.add_parser(
        "protocols", parents=[common], help="list the protocols: names, summary and where their files are"
    )
    ps.add_argument(
        "name", nargs="?", metavar="NAME", help="one protocol (a name or an alias): its places and every test file"
    )
    ps.set_defaults(func=_cmd_protocols)


def describe(protocol: Protocol) -> list[str]:
    """A protocol's lines: its name (and aliases) with its title, its summary, one line per place, then the
    unit its intervals resample (when it declares one)."""
    also = f" (also: {', '.join(protocol.aliases)})" if protocol.aliases else ""
    lines = [f"{protocol.name}{also}: {protocol.title}", f"  {protocol.summary}"]
    places = protocol.places.items()
    lines += [f"  {kind:<10} {path}" for kind, path in places] or ["  (no places declared)"]
    if protocol.unit is not None:
        unit = protocol.unit
        lines.append(f"  {'unit':<10} {unit.name}: the docs sharing {unit.column} ({unit.description})")
    return lines


def describe_with_tests(protocol: Protocol, root: Path) -> list[str]:
    """``describe``, then one line per test file of the protocol found in its tests place under ``root``."""
    return describe(protocol) + [f"  {'test':<10} {path}" for path in protocol_tests(protocol, root)]


def _cmd_protocols(args: argparse.Namespace) -> int:
    """Prints every registered protocol (built-in and plug-in), by name, a blank line between them; or the one
    named, with its test files."""
    if args.name is None:
        print("\n\n".join("\n".join(describe(protocol)) for protocol in protocols()))
        return 0
    protocol = get_protocol(args.name)
    if protocol is None:
        names = ", ".join(name for p in protocols() for name in p.names)
        raise HarnessError(f"harness protocols: no protocol {args.name!r} (known: {names})")
    print("\n".join(describe_with_tests(protocol, ROOT)))
    return 0
