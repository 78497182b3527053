"""``harness protocols``: every registered protocol with its names, what it measures, its declared places and
its unit."""

from __future__ import annotations

import argparse
from typing import Any

from harness.protocols.base import Protocol, protocols


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness protocols``: no options of its own."""
    ps = sub.add_parser(
        "protocols", parents=[common], help="list the protocols: names, summary and where their files are"
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


def _cmd_protocols(args: argparse.Namespace) -> int:
    """Prints every registered protocol (built-in and plug-in), by name, a blank line between them."""
    blocks = ["\n".join(describe(protocol)) for protocol in protocols()]
    print("\n\n".join(blocks))
    return 0
