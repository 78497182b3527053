"""Read lmms-eval task YAML: ``!function`` tags and ``include`` chains.

``!function utils.fn`` becomes a :class:`FunctionRef` that is resolved lazily, so listing tasks
never imports task code, and a missing function is reported when the task is actually used.

Anchors and aliases are allowed within a budget (:data:`MAX_ALIASES` uses per file, adding at most
:data:`MAX_ALIAS_NODES` nodes when expanded), checked on the parsed node graph before any Python value is
built: a file of nested aliases (a "billion laughs" bomb) is refused in one line when it loads.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import yaml

from harness.errors import TaskConfigError
from harness.extras import install_hint

#: The most alias uses (``*name``, ``<<: *name``) one YAML file may hold.
MAX_ALIASES = 64
#: The most nodes the aliases of one file may add when their anchors' content is repeated in place.
MAX_ALIAS_NODES = 10_000


@dataclass(frozen=True)
class FunctionRef:
    """A ``!function module.attr`` reference, relative to the YAML file that wrote it."""

    name: str
    yaml_dir: Path

    def resolve(self, modules: ModuleScope | None = None) -> Callable[..., Any]:
        """Find ``module.py`` beside the YAML first, then fall back to a dotted import. With ``modules`` (one
        run's scope) a task file is executed afresh for that scope, so module-level state a task keeps (OCRBench's
        score dict) never carries over from another run in the same process."""
        module_name, _, attr = self.name.rpartition(".")
        if not module_name or not attr:
            raise TaskConfigError(f"!function {self.name!r} in {self.yaml_dir}: expected 'module.function'")
        local = self.yaml_dir / (module_name.replace(".", "/") + ".py")
        if local.is_file():
            module = _import_file(local) if modules is None else modules.load(local)
        else:
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise TaskConfigError(
                    f"!function {self.name}: no {local} and cannot import {module_name!r} ({exc})"
                ) from None
        fn = getattr(module, attr, None)
        if fn is None:
            raise TaskConfigError(f"!function {self.name}: {module.__file__} has no {attr!r}")
        return cast(Callable[..., Any], fn)


class ModuleScope:
    """The task files one run has loaded: each executed once per scope, apart from every other scope."""

    _ids = itertools.count()

    def __init__(self) -> None:
        self._modules: dict[Path, Any] = {}

    def load(self, path: Path) -> Any:
        """``path`` executed as a module of this scope (once; later calls return the same module)."""
        path = path.resolve()
        if path not in self._modules:
            self._modules[path] = _import_file(path, f"_{next(self._ids)}")
        return self._modules[path]


def _import_file(path: Path, scope: str = "") -> Any:
    """Import a task's ``utils.py`` under a unique module name so two tasks' utils never clash (nor two
    scopes' copies of one file). Task code that imports lmms-eval fails, without it, in one line naming the
    extra that installs it."""
    key = f"harness_task_utils_{abs(hash(str(path.resolve())))}{scope}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    sys.path.insert(0, str(path.parent))  # lmms-eval task utils import siblings this way
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[key]
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "lmms_eval":
            raise TaskConfigError(
                f"{path}: this task's code imports lmms_eval, which is not installed: {install_hint('lmms')}"
            ) from None
        raise TaskConfigError(f"{path}: importing task code failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(str(path.parent))
    return module


def _make_loader(yaml_dir: Path) -> type[yaml.SafeLoader]:
    class _Loader(yaml.SafeLoader):
        aliases = 0

        def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise _AliasBudget(f"more than {MAX_ALIASES} aliases")
            return super().compose_node(parent, index)

    def _function(loader: yaml.SafeLoader, node: yaml.Node) -> FunctionRef:
        return FunctionRef(str(loader.construct_scalar(node)), yaml_dir)  # type: ignore[arg-type]  # PyYAML raises on a non-scalar node

    _Loader.add_constructor("!function", _function)
    return _Loader


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse one YAML file (no include handling); errors name the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskConfigError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = _load_within_budget(text, path.parent)
    except _AliasBudget as exc:
        raise TaskConfigError(
            f"{path}: too many YAML aliases ({exc}; a task file may use {MAX_ALIASES}, adding "
            f"at most {MAX_ALIAS_NODES} nodes)"
        ) from None
    except RecursionError:
        raise TaskConfigError(f"{path}: malformed YAML: nested too deeply") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise TaskConfigError(f"{where}: malformed YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise TaskConfigError(f"{path}: malformed YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TaskConfigError(f"{path}: a task YAML must be a mapping, got {type(data).__name__}")
    return data


class _AliasBudget(Exception):
    """A YAML file's aliases go over the budget (module docstring)."""


def _load_within_budget(text: str, yaml_dir: Path) -> Any:
    """Parse ``text`` to nodes, check its aliases against the budget, then build its value."""
    loader = _make_loader(yaml_dir)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        added = _expanded_size(node) - _distinct_size(node)
        if added > MAX_ALIAS_NODES:
            raise _AliasBudget(f"they expand to {added} more nodes")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _distinct_size(root: yaml.Node) -> int:
    """How many distinct nodes the graph holds (each anchor's content once)."""
    seen = {id(root)}
    stack = [root]
    while stack:
        for child in _children(stack.pop()):
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return len(seen)


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes the document has with every alias replaced by a copy of its anchor's content
    (post-order over the node graph, each node's size computed once; a node holding itself is refused)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if id(node) in sizes:
            continue
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise _AliasBudget("an alias refers to a node that holds it")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def load_yaml_config(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Load a task YAML with its ``include`` chain resolved as lmms-eval does it.

    Included files are relative to the including YAML, applied in reverse list order (so the first
    listed include wins over later ones) and the including file wins over all of them.
    """
    path = path.resolve()
    if path in _seen:
        raise TaskConfigError(f"{path}: include cycle through {' -> '.join(p.name for p in _seen)}")
    config = read_yaml(path)
    includes = config.pop("include", None)
    if includes is None:
        return config
    if isinstance(includes, str):
        includes = [includes]
    merged: dict[str, Any] = {}
    for name in reversed(list(includes)):
        inc = Path(name)
        inc = inc if inc.is_absolute() else path.parent / inc
        if not inc.is_file():
            raise TaskConfigError(f"{path}: include {name!r} not found (looked at {inc})")
        merged.update(load_yaml_config(inc, (*_seen, path)))
    merged.update(config)
    return merged
