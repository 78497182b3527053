"""DiaVLo: SHOULD-KNOW vs REALLY-KNOW behaviour specifications.

Its places: builders/diavlo/, tasks/diavlo/, cards/diavlo.md; here: triplet_parser.py, metrics.py (similarity,
classes, MI), report.py, concept_effects.py (DML), audit.py (`harness audit diavlo`), detector.py (open-vocabulary
boxes), plots.py.
"""
