"""``harness build NAME``: build a dataset; each builder's flags are generated from its options class."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness.arguments import show_progress
from harness.cli.common import common_parser
from harness.disk import disk_problem, failed_path, is_disk_error
from harness.errors import HarnessError

if TYPE_CHECKING:
    from builders.options import OptionSpec
    from harness.builder_spec import Builder


@dataclass(frozen=True)
class BuildRequest:
    """``harness build NAME ...`` read with the builder's own parser: what to build, and where."""

    name: str
    out: Path | None = None
    push_to_hub: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # option name -> typed value (its flag's, then -O's)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """``harness build NAME [OPTION ...]``: the builder's own options are read by :class:`_BuilderArguments`."""
    from builders import builders_help

    bd = sub.add_parser(
        "build",
        parents=[common],
        help="build a dataset (and optionally push it to the Hub)",
        description="Build a dataset into the data dir, where harness eval looks for it.\n"
        "harness build NAME --help lists that builder's options.",
        epilog=f"builders:\n{builders_help()}\n\nan extra installs a builder's optional "
        'dependencies: pip install "vlm-audit-harness[EXTRA]"',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bd.add_argument("name", help="the builder (listed below)")
    bd.add_argument(
        "request",
        nargs=argparse.REMAINDER,
        action=_BuilderArguments,
        metavar="OPTION",
        help="the builder's options (harness build NAME --help)",
    )
    bd.set_defaults(func=_cmd_build, interrupted=_interrupted)


class _BuilderArguments(argparse.Action):
    """Reads the words after ``harness build NAME`` with the parser generated from that builder's options;
    a word it does not take is refused in one line naming the builder's options."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from builders import find_builder
        from builders.options import option_specs

        builder = find_builder(namespace.name)
        if builder is None:  # _cmd_build names the builders
            setattr(namespace, self.dest, BuildRequest(namespace.name))
            return
        specs = option_specs(builder.load().Options)
        own, unknown = builder_parser(builder, specs, parser.prog).parse_known_args(values)
        if hasattr(own, "verbosity"):
            namespace.verbosity = own.verbosity
        if unknown:
            _refuse(builder, unknown)
        given = {s.name: _value(s, getattr(own, s.name)) for s in specs if getattr(own, s.name) is not None}
        setattr(
            namespace,
            self.dest,
            BuildRequest(
                builder.name,
                Path(own.out) if own.out else None,
                own.push_to_hub,
                _assign(builder, specs, given, own.assignments),
            ),
        )


def _value(spec: OptionSpec, value: Any) -> Any:
    return tuple(value) if spec.repeated else value


def _refuse(builder: Builder, words: Sequence[str]) -> NoReturn:
    from builders.options import unknown_options

    flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
    if not flags:
        raise HarnessError(
            f"unexpected argument(s) {' '.join(words)}: the {builder.name} builder takes options "
            f"only (harness build {builder.name} --help)"
        )
    raise unknown_options(builder.name, builder.load().Options, flags)


def builder_parser(builder: Builder, specs: Sequence[OptionSpec], prog: str) -> argparse.ArgumentParser:
    """``harness build NAME``'s parser: the common flags, then one flag per field of the builder's options."""
    parser = argparse.ArgumentParser(
        prog=f"{prog} {builder.name}",
        parents=[common_parser()],
        description=builder.description + (f" [extra: {builder.extra}]" if builder.extra else ""),
    )
    parser.add_argument("--output", "--out", dest="out", help="output folder (default: the data dir, where eval looks)")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="also push the build to this Hub dataset repo")
    parser.add_argument(
        "-O",
        "--option",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set an option by its name (repeatable), the same as its flag",
    )
    group = parser.add_argument_group(f"{builder.name} options")
    for spec in specs:
        if spec.kind is bool and not spec.repeated:
            group.add_argument(spec.flag, dest=spec.name, action="store_const", const=True, help=spec.help)
        else:
            group.add_argument(
                spec.flag,
                dest=spec.name,
                type=_typed(spec),
                action="extend" if spec.repeated else "store",
                help=spec.help + _help_suffix(spec),
            )
    return parser


def _help_suffix(spec: OptionSpec) -> str:
    """How a list option is given, and the default when there is one worth showing."""
    how = " (comma-separated or repeated)" if spec.comma else " (repeatable)" if spec.repeated else ""
    if spec.default is None or spec.default is False or spec.default in ((), ""):
        return how
    shown = ",".join(map(str, spec.default)) if isinstance(spec.default, tuple) else str(spec.default)
    return f"{how} (default: {shown})"


def _typed(spec: OptionSpec) -> Any:
    """The flag's argparse type: its field's type (a list option's value adds one or more items)."""

    def convert(text: str) -> Any:
        try:
            return spec.parse_items(text) if spec.repeated else spec.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _assign(
    builder: Builder, specs: Sequence[OptionSpec], values: dict[str, Any], settings: Sequence[str]
) -> dict[str, Any]:
    """``values`` with the ``-O key=value`` settings applied (a list option's items added to its flag's)."""
    by_name = {s.name: s for s in specs}
    values = dict(values)
    for setting in settings:
        key, sep, text = setting.partition("=")
        spec = by_name.get(key.strip().replace("-", "_"))
        if not sep:
            raise HarnessError(f"-O expects KEY=VALUE, got {setting!r}")
        if spec is None:
            _refuse(builder, ["--" + key.strip()])
        try:
            values[spec.name] = (
                (*values.get(spec.name, ()), *spec.parse_items(text)) if spec.repeated else spec.parse(text)
            )
        except ValueError as exc:
            raise HarnessError(str(exc)) from None
    return values


def _cmd_build(args: argparse.Namespace) -> int:
    """Builds the requested dataset (and pushes it to the Hub if asked), printing where it was written; a
    full, over-quota or read-only disk is one line naming the build and the path."""
    from builders import build_dataset

    request: BuildRequest = args.request
    if show_progress(args):
        print(f"building {request.name} into {request.out or 'the data dir'} ...", file=sys.stderr, flush=True)
    try:
        out = build_dataset(request.name, request.out, push_to_hub=request.push_to_hub, **request.values)
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        where = request.out or Path(".")
        raise HarnessError(
            f"harness build {request.name}: cannot write {disk_problem(failed_path(exc, where), exc)}; "
            "free space or choose another --output, then rerun it"
        ) from None
    print(f"built {request.name}: {out}")
    return 0


def _interrupted(args: argparse.Namespace) -> str:
    """What Ctrl-C during a build left: the build's name, and that rerunning it rebuilds the folder."""
    request: BuildRequest = args.request
    where = f" --output {request.out}" if request.out else ""
    return (
        f"interrupted: harness build {request.name}{where} was stopped before it finished; rerun the same "
        "command to build it"
    )
