"""``harness audit NAME`` for every registered protocol with an audit, and the protocols' own commands."""

from __future__ import annotations

import argparse
from typing import Any

from harness.protocols.base import Command, protocols


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness audit NAME`` for each protocol with an audit, its other names as aliases."""
    au = sub.add_parser("audit", parents=[common], help="protocol audits over saved runs")
    audits = au.add_subparsers(dest="protocol", required=True)
    for protocol in protocols():
        if protocol.audit is not None:
            aliases = [name for name in protocol.names if name != protocol.audit.name]
            _add(audits, protocol.audit, common, aliases)


def add_protocol_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Each protocol's further top-level commands (``Protocol.commands``)."""
    for protocol in protocols():
        for command in protocol.commands:
            _add(sub, command, common, [])


def _add(sub: Any, command: Command, common: argparse.ArgumentParser, aliases: list[str]) -> None:
    parser = sub.add_parser(command.name, aliases=aliases, parents=[common], help=command.help)
    command.add_arguments(parser)
    parser.set_defaults(func=command.run)
