"""Whether a task's filters, metrics and aggregations all resolve, read without running any task code.

The lmms-eval corpus figure counts with it: a config can parse yet name a filter, metric or
aggregation nothing computes (a metric with no ``process_results`` that is no built-in, an aggregation name
lmms-eval never registered, a ``!function`` its file does not define). Task files are parsed, not imported,
so the check needs none of the libraries they import.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path

from harness.engine.filters import DOC_FILTERS, FILTERS
from harness.metrics.aggregation import AGGREGATIONS
from harness.metrics.lmms_builtin import builtin_metric_names
from harness.taskspec.config import TaskConfig
from harness.taskspec.yaml_loader import FunctionRef


@functools.cache
def _top_level_names(path: Path) -> frozenset[str] | None:
    """Names a Python file defines at top level; None when it cannot be parsed or star-imports (unknowable)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    body = list(tree.body)
    while body:  # top-level statements, and those inside top-level if/try/with blocks
        node = body.pop()
        if isinstance(node, ast.If | ast.Try | ast.With):
            body.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
            for handler in getattr(node, "handlers", []):
                body.extend(handler.body)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _module_file(ref: FunctionRef) -> Path | None:
    """The file ``ref``'s module is read from: beside the YAML, else a dotted module's file found under a
    folder above the YAML (``lmms_eval.tasks.phyx.utils`` from inside lmms-eval's package), else None."""
    module = ref.name.rpartition(".")[0]
    relative = Path(module.replace(".", "/") + ".py")
    if (ref.yaml_dir / relative).is_file():
        return ref.yaml_dir / relative
    return next((p / relative for p in ref.yaml_dir.parents if (p / relative).is_file()), None)


def defines(ref: FunctionRef) -> bool:
    """Whether ``ref`` names something its file defines (or, for a module found by import, that it exists)."""
    module, _, attr = ref.name.rpartition(".")
    path = _module_file(ref)
    if path is not None:
        names = _top_level_names(path)
        return names is None or attr in names
    try:
        return bool(module) and importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _filter_problem(config: TaskConfig) -> str | None:
    for pipe in config.filters:
        for step in pipe.steps:
            if isinstance(step.function, FunctionRef):
                if not defines(step.function):
                    return f"filter !function {step.function.name} is not defined"
            elif step.function not in FILTERS and step.function not in DOC_FILTERS:
                return f"filter {step.function!r} is unknown"
    return None


def _metric_problem(config: TaskConfig) -> str | None:
    if not config.metric_list:
        return "no metrics"
    if config.process_results is not None:
        ok = defines(config.process_results)
        return None if ok else f"process_results !function {config.process_results.name} is not defined"
    known = builtin_metric_names(config.output_type)
    missing = [spec.metric for spec in config.metric_list if spec.metric not in known]
    return f"metric {missing[0]!r} has no process_results and is no built-in metric" if missing else None


def _aggregation_problem(config: TaskConfig) -> str | None:
    for spec in config.metric_list:
        agg = spec.aggregation
        if isinstance(agg, FunctionRef) and not defines(agg):
            return f"aggregation !function {agg.name} is not defined"
        if isinstance(agg, str) and agg not in AGGREGATIONS:
            return f"aggregation {agg!r} is unknown"
    return None


def unresolved(config: TaskConfig) -> str | None:
    """The first filter, metric or aggregation of ``config`` that would not resolve, in words; None if all do."""
    return _filter_problem(config) or _metric_problem(config) or _aggregation_problem(config)
