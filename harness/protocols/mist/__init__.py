"""MIST: misleading images and VLM judges.

Its places: builders/mist.py and builders/mist_demo.py, tasks/mist/, cards/mist.md; here: metrics.py (change rate,
direction, agreement), report.py (with the alt-test of harness/metrics/alttest.py), plots.py.
"""
