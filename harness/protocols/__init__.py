"""The audit protocols, one package each: its metrics, report, audit, plots and command-line wiring.

A protocol's other homes are fixed by the project layout: ``builders/<name>/`` (its dataset builder),
``tasks/<name>/`` (lmms-eval YAML tasks) and ``cards/<name>.md`` (its dataset card). Protocol-neutral
statistics (aggregation, bootstrap, alt-test, SQuAD F1, entailment clustering) live in ``harness/metrics``.
"""
