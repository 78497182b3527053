"""Builder options, declared once per builder as a frozen dataclass whose fields carry their help.

``harness build NAME --help`` lists them, ``--flag VALUE`` and ``-O key=value`` set them and
``build_dataset(NAME, out, key=value)`` passes them from Python: all three read that one declaration.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from harness.errors import HarnessError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")  # a builder's Options dataclass
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def option(help: str, default: Any = None, *, comma: bool = False) -> Any:
    """A builder option: its default and its ``--help`` text; ``comma``: a list option also read as ``a,b,c``."""
    return dataclasses.field(default=default, metadata={"help": help, "comma": comma})


@dataclass(frozen=True)
class OptionSpec:
    """One option as the command line sees it: a typed scalar, or a repeatable list of them."""

    name: str
    kind: type  # bool, int, float or str (of each element, for a list)
    repeated: bool
    comma: bool
    help: str
    default: Any

    @property
    def flag(self) -> str:
        """The option's command-line flag: ``--`` and the field name with dashes."""
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> Any:
        """One command-line value as its field's type (ValueError naming the flag when it is not)."""
        if self.kind is bool:
            if text.lower() not in _TRUE | _FALSE:
                raise ValueError(f"{self.flag} expects true or false, got {text!r}")
            return text.lower() in _TRUE
        try:
            return self.kind(text)
        except ValueError:
            raise ValueError(f"{self.flag} expects {self.kind.__name__}, got {text!r}") from None

    def parse_items(self, text: str) -> tuple[Any, ...]:
        """The values one occurrence of a list option adds (``a,b,c`` split when the option says so)."""
        return tuple(self.parse(part) for part in (text.split(",") if self.comma else [text]))


def _kind(hint: Any) -> tuple[type, bool]:
    """(element type, is a list) of ``X``, ``X | None``, ``tuple[X, ...]`` or ``tuple[X, ...] | None``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], True
    return hint, False


def option_specs(options: type) -> tuple[OptionSpec, ...]:
    """The options of a builder's options class, in declaration order."""
    hints = typing.get_type_hints(options)
    specs = []
    for f in dataclasses.fields(options):
        kind, repeated = _kind(hints[f.name])
        specs.append(
            OptionSpec(f.name, kind, repeated, f.metadata.get("comma", False), f.metadata.get("help", ""), f.default)
        )
    return tuple(specs)


def unknown_options(builder: str, options: type, given: Iterable[str]) -> HarnessError:
    """The one-line error for options the builder does not have, naming the ones it has."""
    flags = ", ".join(g if g.startswith("-") else "--" + g.replace("_", "-") for g in given)
    known = ", ".join(spec.flag for spec in option_specs(options))
    return HarnessError(f"option(s) {flags} do not apply to the {builder} builder (its options: {known})")


def make_options(builder: str, options: type[T], values: Mapping[str, Any]) -> T:
    """The builder's options from ``values`` (field name -> typed value); an unknown name is refused."""
    names = {f.name for f in dataclasses.fields(options)}
    extra = sorted(set(values) - names)
    if extra:
        raise unknown_options(builder, options, extra)
    return options(**values)
